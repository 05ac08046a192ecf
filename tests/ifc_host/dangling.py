"""A real IFC file with dangling references, made here: the sample building with four property lines cut.

Other tools (viewers, IfcOpenShell itself) open such files; the host must too, with warnings that name each
reference to an instance the file no longer holds.
"""
from __future__ import annotations

import re
from pathlib import Path

from ifc_host.sample import write_sample_model


def write_dangling_model(path: Path) -> tuple[Path, int, list[int]]:
    """Write the file; return it, the property set whose references dangle, and the removed instance ids."""
    write_sample_model(path, storeys=1)
    text = path.read_text()
    pset = re.search(r"^#(\d+)=IFCPROPERTYSET\('[^']*',\$,'Pset_WallCommon',\$,\(#(\d+),#(\d+),#(\d+),#(\d+)\)\);$",
                     text, re.MULTILINE)
    assert pset is not None, "the sample building has no four-property Pset_WallCommon"
    removed = [int(pset.group(i)) for i in range(2, 6)]
    for step_id in removed:
        text = re.sub(rf"^#{step_id}=.*\n", "", text, count=1, flags=re.MULTILINE)
    path.write_text(text)
    return path, int(pset.group(1)), removed
