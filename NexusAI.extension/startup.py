"""NexusAI startup: runs on Revit's main thread each time pyRevit loads (or reloads) the extension.

Starts the runtime (the external event for main-thread jobs and, when configured, the connection to
the NexusAI server) and registers the dockable pane (Revit accepts panes only during startup).
Long-lived objects live in lib/nexus_runtime (kept in the AppDomain), never in button scripts.
"""
from pyrevit import HOST_APP

from nexus_runtime import pane, runtime

runtime.start(HOST_APP.uiapp)

try:
    pane.register()
except Exception as exc:  # e.g. a reload after startup: the pane registered by the first load is reused
    print("NexusAI: chat pane not registered ({0})".format(exc))

try:  # the team's Revit skills as buttons of the "Team skills" panel (shown from the next reload)
    import os

    from nexus_runtime import team_skills
    from nexus_runtime.config_store import PyRevitSettingsStore

    _skills = team_skills.refresh(os.path.dirname(os.path.abspath(__file__)), PyRevitSettingsStore().load())
    if _skills:
        print(_skills)
except Exception as exc:  # the server may be unreachable at startup: the panel keeps what it had
    print("NexusAI: team skills not refreshed ({0})".format(exc))
