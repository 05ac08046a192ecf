"""The real-browser fixtures of tests/e2e (Chromium through Playwright, the test server) for the skills
page test."""
from tests.e2e.conftest import _quiet_env, browser_factory, playwright_driver, server  # noqa: F401
