"""The host conformance suite (tests/conformance/) run against the Revit runtime in the fake Revit.

The suite's tests and fixtures are imported as they are; only `launcher` is overridden, so the Revit
runtime passes exactly the checks the IFC host passes.
"""
from __future__ import annotations

import pytest

from tests.conformance.conftest import cloud, host, token  # noqa: F401  (fixtures)
from tests.conformance.test_host_conformance import *  # noqa: F401,F403  (the suite's tests)
from tests.revit.harness import RevitHostLauncher


@pytest.fixture(params=["clientwebsocket"])
def launcher(request):
    return RevitHostLauncher(transport=request.param)
