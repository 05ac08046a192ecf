"""The host gate: `/ws/host` and its token check, apart from the chat app (the open sockets: cloud/host_sockets.py).

The chat app mounts it in front of its routes; the embedded core (`nexus run`, `nexus mcp --ifc`, the evaluator,
the batch worker) serves it alone, so a command that only needs its IFC host loads no web framework.
"""
