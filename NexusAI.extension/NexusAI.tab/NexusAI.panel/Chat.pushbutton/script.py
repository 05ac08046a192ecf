"""Open the NexusAI chat pane."""
from pyrevit import forms

from nexus_runtime import pane, registry

if registry.current_runtime() is None:
    forms.alert("The NexusAI runtime is not running. Reload pyRevit (pyRevit tab > Reload).", title="NexusAI")
else:
    try:
        pane.open_pane()
    except Exception as exc:
        forms.alert("The NexusAI pane opens once a document is open.", title="NexusAI", sub_msg=str(exc))
