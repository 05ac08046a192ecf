"""`nexus eval`: run a suite of tasks through the real loop and the real IFC host, check each result, report."""
