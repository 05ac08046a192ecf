"""NexusAI as an MCP server: the loop's own tools, the reviewer and delegated runs, for MCP clients.

`nexus mcp --ifc` serves them over stdio with an embedded core; `nexus serve --mcp-port` serves them over
streamable HTTP beside the deployment's API (same tokens, users and hosts); `nexus mcp --server` bridges
stdio to that endpoint.
"""
