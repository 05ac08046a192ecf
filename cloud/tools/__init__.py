"""Tool execution: dispatch to hosts with budgets, anchored edits, and the model's copy of results."""
