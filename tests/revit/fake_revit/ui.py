"""Fake Autodesk.Revit.UI: UIApplication, UIDocument, ExternalEvent, dockable panes, TaskDialog.

ExternalEvent.Raise() returns Accepted, Pending (already raised, not yet run) or Denied (for good, once
its handler failed); the handler's Execute runs later on the fake main thread, and never while a modal
dialog is open (Revit only runs external events when idle).
"""
from __future__ import annotations

from typing import Any

from .common import NetList, Session, make_enum
from .events import event_property

ExternalEventRequest = make_enum("ExternalEventRequest", {"Accepted": 0, "Pending": 1, "Denied": 2, "TimedOut": 3})
TaskDialogResult = make_enum("TaskDialogResult", {"None": 0, "Ok": 1, "Cancel": 2, "Yes": 6, "No": 7, "Close": 8})


class IExternalEventHandler:
    """Interface: Execute(uiapp) and GetName()."""


class IDockablePaneProvider:
    """Interface: SetupDockablePane(data)."""


class ExternalEvent:
    def __init__(self, handler: Any) -> None:
        self._handler = handler
        self._pending = False
        self._disposed = False
        self._denied = False

    @staticmethod
    def Create(handler: Any) -> ExternalEvent:
        Session.check_api_context("ExternalEvent.Create")
        event = ExternalEvent(handler)
        Session.world.external_events.append(event)
        return event

    @property
    def IsPending(self) -> bool:
        return self._pending

    def Raise(self) -> Any:
        return Session.world._raise(self)

    def Dispose(self) -> None:
        self._disposed = True


class Selection:
    def __init__(self, document: Any = None) -> None:
        self._document = document
        self._ids: list[Any] = []

    def GetElementIds(self) -> NetList:
        return NetList(self._ids)

    def SetElementIds(self, ids: Any) -> None:
        """Like Revit, refuses ids of elements that are not (or no longer) in the document."""
        ids = list(ids)
        if self._document is not None and any(i._value not in self._document._elements for i in ids):
            raise Session.world.exceptions.ArgumentException("One or more elements do not exist in the document.")
        self._ids = ids


class UIDocument:
    def __init__(self, document: Any, world: Any) -> None:
        self._document = document
        self._world = world
        self.Selection = Selection(document)
        self._shown: list[tuple[str, list[int]]] = []  # ShowElements calls: (the view zoomed in, element ids)

    @property
    def Document(self) -> Any:
        return self._document

    @property
    def ActiveView(self) -> Any:
        return self._world.active_view

    @ActiveView.setter
    def ActiveView(self, view: Any) -> None:
        Session.check_api_context("UIDocument.ActiveView")
        self._world.activate_view(view)

    @property
    def ActiveGraphicalView(self) -> Any:
        return self._world.active_view

    def RefreshActiveView(self) -> None:
        Session.check_api_context("UIDocument.RefreshActiveView")

    def ShowElements(self, elementIds: Any) -> None:
        """Zoom to the elements: in the active view when it shows them all, else in a view that does (which
        becomes active); Revit's failures: no or deleted elements (ArgumentException), an open transaction
        or no view that shows them (InvalidOperationException)."""
        Session.check_api_context("UIDocument.ShowElements")
        errors = self._world.exceptions
        ids = list(elementIds)
        if not ids:
            raise errors.ArgumentException("elementIds is empty.")
        elements = [self._document._elements.get(i._value) for i in ids]
        if any(e is None for e in elements):
            raise errors.ArgumentException("One or more elements in elementIds do not exist in the document.")
        if self._document.IsModifiable:
            raise errors.InvalidOperationException("The document is modifiable (a transaction is open).")
        from .db import View
        candidates = [self._world.active_view] + [v for v in self._document._elements.values()
                                                  if isinstance(v, View) and not v.IsTemplate]
        view = next((v for v in candidates if v is not None and all(v._visible(e) for e in elements)), None)
        if view is None:
            raise errors.InvalidOperationException("No good view can be found to show the elements.")
        if view is not self._world.active_view:
            self._world.activate_view(view)
        self._shown.append((view.Name, [i._value for i in ids]))


class DockablePaneId:
    def __init__(self, guid: Any) -> None:
        self.Guid = guid

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DockablePaneId) and str(other.Guid) == str(self.Guid)

    def __hash__(self) -> int:
        return hash(str(self.Guid))


class DockablePaneProviderData:
    def __init__(self) -> None:
        self.FrameworkElement: Any = None
        self.VisibleByDefault = True


class DockablePane:
    def __init__(self, pane_id: DockablePaneId, title: str, data: DockablePaneProviderData) -> None:
        self.Id = pane_id
        self._title = title
        self._data = data
        self._shown = bool(data.VisibleByDefault)

    @staticmethod
    def PaneExists(pane_id: DockablePaneId) -> bool:
        return pane_id in Session.world.panes

    def GetTitle(self) -> str:
        return self._title

    def Show(self) -> None:
        Session.check_api_context("DockablePane.Show")
        element = self._data.FrameworkElement
        if not self._shown and hasattr(element, "Loaded"):
            # WPF raises Loaded once the control joins the visual tree, later, from the dispatcher.
            Session.world.post_ui(element.Loaded.fire, element, None)
        self._shown = True

    def Hide(self) -> None:
        self._shown = False

    def IsShown(self) -> bool:
        return self._shown


class UIApplication:
    ViewActivated = event_property("ViewActivated")
    DialogBoxShowing = event_property("DialogBoxShowing")
    Idling = event_property("Idling")

    def __init__(self, application: Any, world: Any) -> None:
        self._application = application
        self._world = world

    @property
    def MainWindowHandle(self) -> Any:
        from .dotnet import IntPtr
        return IntPtr(self._world.main_window_handle)

    @property
    def Application(self) -> Any:
        return self._application

    @property
    def ActiveUIDocument(self) -> UIDocument | None:
        return self._world.uidoc

    def RegisterDockablePane(self, pane_id: DockablePaneId, title: str, provider: Any) -> None:
        Session.check_api_context("UIApplication.RegisterDockablePane")
        if self._world.startup_complete:
            raise Session.world.exceptions.InvalidOperationException(
                "Dockable panes can only be registered while Revit starts up.")
        if pane_id in self._world.panes:
            raise Session.world.exceptions.ArgumentException("A dockable pane with this id is already registered.")
        data = DockablePaneProviderData()
        provider.SetupDockablePane(data)
        self._world.panes[pane_id] = DockablePane(pane_id, title, data)

    def GetDockablePane(self, pane_id: DockablePaneId) -> DockablePane:
        Session.check_api_context("UIApplication.GetDockablePane")
        if self._world.uidoc is None:
            raise Session.world.exceptions.InvalidOperationException(
                "Dockable panes cannot be shown while no document is open.")
        return self._world.panes[pane_id]


class TaskDialog:
    @staticmethod
    def Show(title: str, message: str) -> Any:
        """A task dialog with a Close button. DialogBoxShowing handlers see it first and may answer it."""
        Session.check_api_context("TaskDialog.Show")
        from .events import TaskDialogShowingEventArgs
        world = Session.world
        args = TaskDialogShowingEventArgs("TaskDialog_" + str(title).replace(" ", "_"), message,
                                          (int(TaskDialogResult.Close),))
        world.uiapp.DialogBoxShowing.fire(world.uiapp, args)
        if args._overridden is not None:
            world.dismissed_dialogs.append((message, args._overridden))
            return next(v for v in vars(TaskDialogResult).values() if getattr(v, "_value", None) == args._overridden)
        world.task_dialogs.append((title, message))
        return TaskDialogResult.Close
