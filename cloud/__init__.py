"""NexusAI orchestrator: the agent loop, vendor adapters, host capability providers and the web server."""

__version__ = "0.1.0"
