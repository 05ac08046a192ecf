"""The host gate: `/ws/host`, its token check and the open host sockets, apart from the chat app.

The chat app mounts it in front of its routes; the embedded core (`nexus run`, `nexus mcp --ifc`, the evaluator,
the batch worker) serves it alone, so a command that only needs its IFC host loads no web framework.
"""
