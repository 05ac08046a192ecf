"""NexusAI Doctor: check this Revit, this pyRevit and this network, show the result as a table and send
it to the NexusAI server."""
from pyrevit import forms

from nexus_runtime import registry

runtime = registry.current_runtime()
if runtime is None:
    forms.alert("The NexusAI runtime is not running. Reload pyRevit (pyRevit tab > Reload).", title="NexusAI")
else:
    # The checks finish on Revit's main thread once this button returns (the ExternalEvent is one of them).
    runtime.run_doctor_for_person()
