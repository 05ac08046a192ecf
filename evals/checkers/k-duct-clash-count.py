"""How many hard clashes are there between ducts and walls?"""
from .shared import answers, clashes

check = answers.number_in_answer(lambda model: len(clashes.wall_clashes(model)))
