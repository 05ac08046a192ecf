"""Connect to / disconnect from the NexusAI server (toggle)."""
from pyrevit import forms, script

from nexus_runtime import registry

runtime = registry.current_runtime()
if runtime is None:
    forms.alert("The NexusAI runtime is not running. Reload pyRevit (pyRevit tab > Reload).", title="NexusAI")
elif not runtime.settings.is_complete():
    forms.alert("Set the server URL and your token first (NexusAI > Settings).", title="NexusAI")
else:
    runtime.toggle_connection()
    script.toggle_icon(runtime.status()["wanted"])
