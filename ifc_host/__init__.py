"""The IFC host: runtime, sandboxed script execution, change tracking, plan rendering and the sample building."""
