"""The one runtime object of this Revit session, shared across pyRevit engines. Revit-facing.

Each pyRevit button runs in its own IronPython engine with its own sys.modules, and a reload starts a
new engine, so a module-level global is not shared. The AppDomain is: startup.py stores the runtime
there; buttons and a later reload find it there.
"""
from System import AppDomain

KEY = "NexusAI.runtime"


def current_runtime():
    return AppDomain.CurrentDomain.GetData(KEY)


def set_runtime(runtime):
    AppDomain.CurrentDomain.SetData(KEY, runtime)
