"""The host conformance suite (tests/conformance/) run against the Revit runtime in the fake Revit.

The suite's tests and fixtures are imported as they are; only `launcher` is overridden, so the Revit
runtime passes exactly the checks the IFC host passes.
"""
from __future__ import annotations

import pytest

conformance = pytest.importorskip("tests.conformance.test_host_conformance",
                                  reason="the host conformance suite (tests/conformance/) is not present")

from tests.conformance.conftest import cloud, host, token  # noqa: E402,F401  (fixtures)
from tests.conformance.test_host_conformance import *  # noqa: E402,F401,F403  (the suite's tests)
from tests.revit.harness import RevitHostLauncher  # noqa: E402


@pytest.fixture(params=["clientwebsocket"])
def launcher(request):
    return RevitHostLauncher(transport=request.param)
