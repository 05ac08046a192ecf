"""NexusAI orchestrator: the agent loop, vendor adapters, host capability providers and the web server."""

__version__ = "0.1.0"

from cloud import pyparse as _pyparse  # noqa: E402

_pyparse.install()  # ast.parse one thread at a time on the CPython versions that need it (gh-106905)
