"""On Level 1, create a 4 m long, 3 m high, 100 mm thick wall named 'Meeting wall' from x=2, y=-8 running east, with a 900 x 2100 door marked D-NEW in an opening 1.5 m from its start."""
import ifcopenshell.util.element as ue

from .shared import edits


def _door(before, after, wall):
    doors = edits.new_of(before, after, "IfcDoor")
    if len(doors) != 1 or doors[0].Tag != "D-NEW":
        return False, f"expected one new door D-NEW, found {[d.Tag for d in doors]}"
    openings = [rel.RelatedOpeningElement for rel in wall.HasOpenings]
    if len(openings) != 1:
        return False, f"the new wall has {len(openings)} openings"
    filled = [rel.RelatedBuildingElement for rel in openings[0].HasFillings]
    if filled != [doors[0]]:
        return False, "the door does not fill the wall's opening"
    container = ue.get_container(doors[0])
    if container is None or container.Name != "Level 1":
        return False, "the new door is not on Level 1"
    return True, ""


check = edits.new_wall("Meeting wall", "Level 1", (2.0, -8.0), door=_door, door_classes=("IfcDoor", "IfcOpeningElement"))
