"""IDS on files nobody here wrote: buildingSMART's 314 implementers' test cases and the eleven practitioners'
sample IDS files (buildingSMART/IDS, beside the checkout; `NEXUS_IDS_SUITE`, set by scripts/corpus.sh, names the
folder). The product's own parse (`parse_ids`) and IfcOpenShell's ifctester on the cases' own IFC files.

Every case whose outcome disagrees with its name is listed in docs/ids.md with the reason; a case that changes
outcome either way fails here, so the list and the count stay exact.
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import ifcopenshell
import pytest

from ifc_host.ids_check import check_model
from ifc_host.ids_reader import IdsProblem, parse_ids
from ifc_host.model_file import open_checked
from tests.corpus.corpus_files import REPO_ROOT, manifest

SUITE_ENV = "NEXUS_IDS_SUITE"
DOCUMENTED = REPO_ROOT / "docs" / "ids.md"
AGREEING_AT_LEAST = 267


def suite() -> Path:
    folder = os.environ.get(SUITE_ENV, "")
    if not folder or not Path(folder, "Documentation", "testcases").is_dir():
        pytest.skip(f"{SUITE_ENV} does not name buildingSMART's IDS folder (scripts/corpus.sh sets it from "
                    f"../shared/ids beside the checkout): {folder or 'unset'}")
    return Path(folder)


def outcome(case: Path) -> str:
    """'invalid' when the product refuses the IDS, else whether the case's IFC passes every specification."""
    try:
        ids = parse_ids(case.read_bytes())
    except IdsProblem:
        return "invalid"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ids.validate(ifcopenshell.open(str(case.with_suffix(".ifc"))))
    return "pass" if all(spec.status is not False for spec in ids.specifications) else "fail"


def documented_disagreements() -> dict[str, str]:
    """case -> what ifctester gives, from the table in docs/ids.md."""
    rows = re.findall(r"^\| `([a-z]+/[^`]+\.ids)` \| (pass|fail|invalid) \| (pass|fail|invalid) \|",
                      DOCUMENTED.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {case: got for case, _expected, got in rows}


def test_the_official_test_cases_agree_except_where_docs_ids_md_says_why():
    cases = sorted((suite() / "Documentation" / "testcases").glob("*/*.ids"))
    assert len(cases) == 314, f"expected buildingSMART's 314 test cases, found {len(cases)}"
    documented = documented_disagreements()
    disagreeing: dict[str, str] = {}
    for case in cases:
        got = outcome(case)
        if got != case.name.split("-")[0]:
            disagreeing[f"{case.parent.name}/{case.name}"] = got
    agreeing = len(cases) - len(disagreeing)
    print(f"IDS test cases: {agreeing} of {len(cases)} agree with their expected outcome")
    assert agreeing >= AGREEING_AT_LEAST
    undocumented = {case: got for case, got in disagreeing.items() if documented.get(case) != got}
    assert not undocumented, f"outcomes not listed in docs/ids.md (case: what we gave): {undocumented}"
    fixed = sorted(set(documented) - set(disagreeing))
    assert not fixed, f"these now agree: remove them from docs/ids.md and raise AGREEING_AT_LEAST: {fixed}"


def test_every_sample_ids_file_loads_and_checks_a_corpus_file():
    samples = sorted((suite() / "Development").glob("*.ids"))
    assert len(samples) == 11, [p.name for p in samples]
    by_schema: dict[str, Path] = {}  # the schema a corpus file is read as -> its smallest such file
    for entry in sorted(manifest(), key=lambda e: e.bytes):
        read_as = "IFC4X3_ADD2" if entry.schema.startswith("IFC4X3") else entry.schema
        by_schema.setdefault(read_as, entry.location)
    assert {"IFC2X3", "IFC4", "IFC4X3_ADD2"} <= set(by_schema), by_schema
    for sample in samples:
        ids = parse_ids(sample.read_bytes())
        assert ids.specifications, sample.name
        versions = sorted({v for spec in ids.specifications for v in spec.ifcVersion or []} & set(by_schema))
        assert versions, f"{sample.name}: no corpus file has a schema its specifications are for"
        model = open_checked(by_schema[versions[0]])
        state = check_model(model, ids)
        checked = set(state.names) - set(state.other_version)
        assert checked, f"{sample.name}: no specification was applied to {model.schema_identifier}"


def test_specifications_for_another_ifc_version_are_not_applied_and_are_named():
    ids_text = (suite() / "Documentation" / "testcases" / "ids" /
                "fail-required_specifications_need_at_least_one_applicable_entity_2_2.ids").read_bytes()
    case_ifc = (suite() / "Documentation" / "testcases" / "ids" /
                "fail-required_specifications_need_at_least_one_applicable_entity_2_2.ifc")
    model = ifcopenshell.open(str(case_ifc))
    assert model.schema_identifier == "IFC4"
    state = check_model(model, parse_ids(ids_text))
    assert state.other_version == {0: "IFC2X3"}
    assert not state.spec_failures and not state.failures
