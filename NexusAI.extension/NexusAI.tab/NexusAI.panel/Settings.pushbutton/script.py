"""Set the NexusAI server URL and access token."""
from pyrevit import forms

from nexus_runtime import registry
from nexus_runtime.config_store import PyRevitSettingsStore
from nexus_runtime.settings import apply_user_input

TITLE = "NexusAI settings"

runtime = registry.current_runtime()
store = PyRevitSettingsStore()
current = runtime.settings if runtime is not None else store.load()

server_url = forms.ask_for_string(default=current.server_url, prompt="NexusAI server URL", title=TITLE)
token = None
if server_url is not None:
    hint = "Access token (from `nexus token create`)"
    if current.token:
        hint += "; leave empty to keep the current one"
    token = forms.ask_for_string(default="", prompt=hint, title=TITLE)

if server_url is not None and token is not None:
    try:
        updated = apply_user_input(current, server_url, token)
    except ValueError as exc:
        forms.alert(str(exc), title=TITLE)
    else:
        if runtime is not None:
            runtime.update_settings(updated)
        else:
            store.save(updated)
        forms.alert("Saved. Use Connect to connect this Revit to " + updated.server_url + ".", title=TITLE)
