from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus.contact_sheet import ContactSheet
from tests.corpus.corpus_files import REPO_ROOT

# One PNG per corpus file with every view drawn in this run; the folder is printed at the end of the run
# (tests/conftest.py) for a person, or CI, to keep.
CONTACT_SHEETS = REPO_ROOT / ".cache" / "artifacts" / "contact-sheets"


@pytest.fixture()
def contact_sheet(request: pytest.FixtureRequest) -> ContactSheet:
    """This test's contact sheet; the test writes it with `contact_sheet.write(sheet_path(name))`."""
    return ContactSheet()


def sheet_path(name: str) -> Path:
    return CONTACT_SHEETS / f"{Path(name).stem}.png"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a long test on the largest real files (CI runs it; by hand: -m slow)")
