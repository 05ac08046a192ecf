"""What the batch IDS tests share: models the automation leaves IDS-conformant and models it breaks, the
script (every wall marked as in support.SCRIPT; on a project named BREAK-IDS it also removes the FireRating
of every door type, so doors that were rated no longer are), and the IDS (doors carry Pset_DoorCommon.FireRating)."""
from __future__ import annotations

from pathlib import Path

import ifcopenshell

from tests.batch.support import MARK, write_sample
from tests.ifc_host.test_ids import FIRE_RATING_IDS

BREAK_PROJECT = "BREAK-IDS"
IDS_TITLE = "Doors are fire rated"
IDS_SCRIPT = f'''
for wall in model.by_type("IfcWall"):
    wall.Description = {MARK!r}
if model.by_type("IfcProject")[0].Name == {BREAK_PROJECT!r}:
    for pset in model.by_type("IfcPropertySet"):
        if pset.Name == "Pset_DoorCommon" and any(p.Name == "FireRating" for p in pset.HasProperties):
            ifcopenshell.api.pset.edit_pset(model, pset=pset, properties={{"FireRating": None}})
'''

__all__ = ["BREAK_PROJECT", "FIRE_RATING_IDS", "IDS_SCRIPT", "IDS_TITLE", "make_ids_models"]


def make_ids_models(folder: Path, plain: int = 1, broken: int = 1) -> dict[str, list[Path]]:
    """`plain` sample models the script only marks, `broken` ones whose door ratings it removes."""
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, list[Path]] = {"plain": [], "broken": []}
    for i in range(plain):
        made["plain"].append(write_sample(folder / f"plain_{i:02d}.ifc", i))
    for i in range(broken):
        path = write_sample(folder / f"broken_{i:02d}.ifc", 50 + i, BREAK_PROJECT)
        model = ifcopenshell.open(str(path))
        rated = [p for p in model.by_type("IfcPropertySet") if p.Name == "Pset_DoorCommon"
                 and any(v.Name == "FireRating" for v in p.HasProperties)]
        assert rated, f"{path.name}: no rated door type, the script would break nothing"
        made["broken"].append(path)
    return made
