"""Acceptance (issue 27): every buildingSMART BCF-XML 2.1 and 3.0 test case is read by the product's reader
(cloud/bcf/archive.py) and written back unchanged in meaning: topics, comments, viewpoints, components, snapshots,
documents and extensions, compared in a normalised form (normal.py) of the input and the output."""
from __future__ import annotations

import zipfile

import pytest

from cloud.bcf.archive import BcfProblem, read_bcf, version_of, write_bcf
from tests.coordination.normal import normalised
from tests.coordination.suite import cases

CASES_PER_VERSION = 19  # buildingSMART/BCF-XML at bc48611: 19 archives for 2.1, 19 for 3.0


@pytest.mark.parametrize("version", ["2.1", "3.0"])
def test_every_official_test_case_survives_a_round_trip_unchanged_in_meaning(version, tmp_path):
    archives = cases(version)
    assert len(archives) == CASES_PER_VERSION, [str(a) for a in archives]
    changed: dict[str, list[str]] = {}
    for index, archive in enumerate(archives):
        document = read_bcf(archive)
        assert version_of(document) == version
        out = write_bcf(document, tmp_path / f"{index}.bcf")
        before, after = normalised(archive), normalised(out)
        differing = sorted(set(before) ^ set(after)) + sorted(k for k in set(before) & set(after)
                                                              if before[k] != after[k])
        if differing:
            changed[str(archive.relative_to(archive.parents[3]))] = differing
        if any(n.endswith(".png") for n in before):  # snapshots are really there, byte for byte
            assert {k: v for k, v in before.items() if k.endswith(".png")} == \
                   {k: v for k, v in after.items() if k.endswith(".png")}
    assert not changed, f"changed by the round trip: {changed}"


def test_a_topic_in_a_folder_not_named_by_its_guid_keeps_its_viewpoint(tmp_path):
    """The 3.0 case "Single invisible wall" keeps its topic d5121f1c… in a folder e1fff3a6…; the product writes the
    markup, the viewpoint and the snapshot together in the folder of the topic's Guid."""
    [archive] = [a for a in cases("3.0") if a.name == "single invisible wall.bcf"]
    out = write_bcf(read_bcf(archive), tmp_path / "out.bcf")
    with zipfile.ZipFile(out) as written:
        names = [n for n in written.namelist() if not n.endswith("/")]
    folders = {n.split("/")[0] for n in names if "/" in n}
    assert folders == {"d5121f1c-11e0-4f25-9d23-7ace76853a8f"}, names
    topic = read_bcf(out).topics["d5121f1c-11e0-4f25-9d23-7ace76853a8f"]
    [viewpoint] = topic.viewpoints.values()
    assert viewpoint.snapshot and viewpoint.snapshot.startswith(b"\x89PNG")


def test_what_is_not_a_bcf_archive_is_refused_naming_why(tmp_path):
    missing = tmp_path / "nothing.bcf"
    with pytest.raises(BcfProblem, match="no BCF file"):
        read_bcf(missing)
    text = tmp_path / "text.bcf"
    text.write_text("not a zip")
    with pytest.raises(BcfProblem, match="not a zip file"):
        read_bcf(text)
    empty = tmp_path / "empty.bcf"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(BcfProblem, match="no bcf.version"):
        read_bcf(empty)
