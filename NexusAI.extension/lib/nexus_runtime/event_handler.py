"""The one IExternalEventHandler: drains the job queue on Revit's main thread. Revit-facing."""
from Autodesk.Revit.UI import ExternalEvent, IExternalEventHandler


class JobEventHandler(IExternalEventHandler):
    def __init__(self, dispatcher, log):
        self._dispatcher = dispatcher
        self._log = log

    def Execute(self, uiapp):
        # An exception escaping an external event handler can take Revit down: catch everything.
        try:
            self._dispatcher.drain(uiapp)
        except Exception as exc:
            self._log.write("job handler failed: {0}".format(exc))

    def GetName(self):
        return "NexusAI runtime"


def create_job_event(dispatcher, log, wake=None):
    """Must run on the main thread (startup): Revit only creates external events in an API context.
    `wake()` (main_window.py) is called after each accepted Raise()."""
    handler = JobEventHandler(dispatcher, log)
    event = ExternalEvent.Create(handler)
    dispatcher.attach_event(event.Raise, wake)
    return handler, event
