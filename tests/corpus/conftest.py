from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.corpus.contact_sheet import ContactSheet
from tests.corpus.corpus_files import REPO_ROOT

CONTACT_SHEET = REPO_ROOT / "test-artifacts" / "corpus-contact-sheet.png"


@pytest.fixture(scope="session")
def contact_sheet() -> Iterator[ContactSheet]:
    """Every corpus view rendered in this run, written to test-artifacts/corpus-contact-sheet.png at the end."""
    sheet = ContactSheet()
    yield sheet
    if len(sheet):
        sheet.write(CONTACT_SHEET)
