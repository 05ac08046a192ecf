"""On Level 1, create a 4 m long, 3 m high, 100 mm thick wall named 'New partition', starting at x=2, y=-8 and running east."""
from .shared import edits

check = edits.new_wall("New partition", "Level 1", (2.0, -8.0))
