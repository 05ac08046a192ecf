"""A FAKE of the Revit API (and of the bits of .NET, WPF and pyRevit the NexusAI extension uses).

This is not Revit. It is a small model of the behaviour the runtime depends on, written from the API
documentation, the Revit 2026 stubs, pyRevit's and IronPython 2.7's sources, so the extension's code can
run under CPython in tests:
- one "Revit main thread" that runs ExternalEvent handlers only when idle (never while a modal dialog
  is open), and API objects that refuse calls from any other thread;
- modal WPF windows (ShowDialog) run a nested loop on that thread: DispatcherTimers tick and UI
  actions posted with run_on_main (a click) are processed, external events are not;
- several open documents (Application.Documents), cancellable pre-events, DialogBoxShowing;
- transactions, failure processing, DocumentChanged, image export: see fake_revit/db.py;
- ExternalEvent.Raise() returning Accepted / Pending / Denied (Denied for good once the handler failed); a
  user who is away (`user_idle`): raised events then wait until a message reaches the main window;
- a synchronization context only inside dispatcher work (not during startup), Dispatcher.PushFrame;
- a network that can stall, black-hole (half-open) or require the system proxy;
- ClientWebSocket on a real socket, WPF/XAML loading, WebView2: see fake_revit/dotnet.py and pyrevit_fake.py.

`FakeRevit(...)` builds a session with a sample project; `install(session)` puts the fake modules into
sys.modules under their real names (clr, System..., Autodesk.Revit..., pyrevit..., wpf) and `uninstall()`
restores whatever was there (the pyrevit-stubs-26 package installs empty `Autodesk`/`System` packages).
"""
from __future__ import annotations

import ctypes
import json
import queue
import sys
import threading
import time
import types
from typing import Any

from . import appservices, db, dotnet, events, exceptions, pyrevit_fake, ui
from .common import Session

_FAKED_ROOTS = ("clr", "wpf", "System", "Autodesk", "Microsoft", "pyrevit")
WEBVIEW2_ASSEMBLIES = ("Microsoft.Web.WebView2.Core", "Microsoft.Web.WebView2.Wpf")


class FakeRevit:
    def __init__(self, version: int = 2026, with_document: bool = True, webview2_runtime: str | None = "150.0.3200.1",
                 webview2_assemblies: bool = True, levels: int = 3) -> None:
        self.version = version
        self.exceptions = exceptions
        self.missing_assemblies = set() if webview2_assemblies else set(WEBVIEW2_ASSEMBLIES)
        self.webview2_runtime_version = webview2_runtime
        self.app = appservices.Application(version)
        self.uiapp = ui.UIApplication(self.app, self)
        self.user_config = pyrevit_fake.UserConfig()
        self.updaters: list[Any] = []
        self.blocking_dialogs: list[list[str]] = []
        self.external_events: list[ui.ExternalEvent] = []
        self.panes: dict[Any, ui.DockablePane] = {}
        self.task_dialogs: list[tuple[str, str]] = []
        self.dismissed_dialogs: list[tuple[str, int]] = []  # (message, the button code a handler chose)
        self.windows: list[Any] = []  # modal windows shown, in order
        self.documents: list[db.Document] = []
        self.alerts: list[tuple[Any, ...]] = []
        self.prompts: list[tuple[Any, ...]] = []
        self.prompt_answers: list[str | None] = []
        self.opened_urls: list[str] = []
        self.timers: list[Any] = []
        self.webviews: list[Any] = []
        self.button_icon_states: list[bool] = []
        self.handler_crashes: list[str] = []
        self.handler_runs = 0
        self.startup_complete = False
        self.network = "ok"  # "stalled": sends never complete; "black hole": a half-open link
        self.proxy_required = False  # only the system proxy with the user's default credentials gets out
        self.user_idle = False  # Revit gets no Idling while the user is away: external events wait
        self.main_window_messages: list[int] = []  # messages posted to Revit's main window
        self.failures_after_preprocessing: list[str] = []  # errors another add-in posts after ours ran
        self.windows_fail = False  # a WPF window that cannot be created (a XAML or theme problem)
        self.webview2_start_failures = 0  # how many WebView2 environment creations fail before one works
        self._ui_depth = 0
        self._window_messages = 0
        self._read_only_reason: str | None = None
        self._modal = False
        self._modal_windows = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._calls: queue.Queue = queue.Queue()
        self._raised: list[ui.ExternalEvent] = []
        self._stopped = False
        self.thread = threading.Thread(target=self._main_loop, name="Revit main thread", daemon=True)
        self.doc: db.Document | None = None
        self.uidoc: ui.UIDocument | None = None
        self.active_view: Any = None
        Session.version = version
        Session.world = self
        if with_document:
            self.open_document("Tower A", levels)

    # --- model -------------------------------------------------------------------------------------

    def open_document(self, title: str, levels: int = 3) -> db.Document:
        doc = self.open_background_document(title, levels)
        self.doc = doc
        self.uidoc = ui.UIDocument(doc, self)
        self.active_view = next(v for v in doc._elements.values() if isinstance(v, db.ViewPlan) and not v.IsTemplate)
        return doc

    def open_background_document(self, title: str, levels: int = 1) -> db.Document:
        """A document open in this session but not active (another project, a family being edited)."""
        doc = db.Document(self, title)
        doc.Application = self.app
        build_sample_model(doc, levels)
        self.documents.append(doc)
        return doc

    def link_document(self, title: str, offset: tuple[float, float, float] = (0.0, 0.0, 0.0), loaded: bool = True,
                      broken: bool = False) -> db.Document:
        """A Revit model linked into the active document at `offset` (Revit opens linked models, read-only)."""
        linked = self.open_background_document(title)
        linked._linked = True
        self.doc._seed(db.RevitLinkInstance(self.doc, title + ".rvt : 1 : location <Not Shared>",
                                            linked if loaded else None,
                                            db.Transform.CreateTranslation(db.XYZ(*offset)), broken))
        return linked

    def close_document(self) -> None:
        if self.doc in self.documents:
            self.documents.remove(self.doc)
        self.doc, self.uidoc, self.active_view = None, None, None

    def show_message_box(self, message: str, dialog_type: int = 1) -> int:
        """Revit showing a Win32 message box (main thread): DialogBoxShowing handlers may answer it.
        dialog_type is the MB_ button set: 0 OK, 1 OK/Cancel, 3 Yes/No/Cancel, 4 Yes/No."""
        buttons = {0: (1,), 1: (1, 2), 2: (3, 4, 5), 3: (6, 7, 2), 4: (6, 7), 5: (4, 2)}.get(dialog_type & 0xF, (1,))
        args = events.MessageBoxShowingEventArgs(message, dialog_type, buttons)
        self.uiapp.DialogBoxShowing.fire(self.uiapp, args)
        if args._overridden is None:
            self.task_dialogs.append(("message box", message))  # would block Revit until someone clicks
            return buttons[0]
        self.dismissed_dialogs.append((message, args._overridden))
        return args._overridden

    def element(self, name: str) -> Any:
        return next(e for e in self.doc._elements.values() if e.Name == name)

    def document_bytes(self, doc: db.Document | None = None) -> bytes:
        """A document's state (the active one by default), byte for byte comparable (what a rollback must
        leave untouched)."""
        doc = doc or self.doc
        state = []
        for key in sorted(doc._elements):
            element = doc._elements[key]
            entry: dict[str, Any] = {"id": key, "class": type(element).__name__, "name": element._name,
                                     "params": {n: _plain(p._value) for n, p in sorted(element._params.items())}}
            if isinstance(element, db.Wall):
                entry["curve"] = [[p.X, p.Y, p.Z] for p in element._endpoints()]
                entry["type"] = element._type.Id._value
            state.append(entry)
        return json.dumps(state, sort_keys=True).encode()

    def activate_view(self, view: Any) -> None:
        previous, self.active_view = self.active_view, view
        self.uiapp.ViewActivated.fire(self.uiapp, events.ViewActivatedEventArgs(self.doc, previous, view))

    # --- the main thread -----------------------------------------------------------------------------

    def start(self) -> FakeRevit:
        Session.main_thread = self.thread
        self.thread.start()
        return self

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        self.thread.join(5)
        if Session.main_thread is self.thread:
            Session.main_thread = None

    def run_on_main(self, function: Any, *args: Any, timeout: float = 30.0) -> Any:
        """Run `function` on Revit's main thread (like a command or startup script) and return its result."""
        done = threading.Event()
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["result"] = function(*args)
            except BaseException as error:  # noqa: BLE001 - re-raised in the caller
                box["error"] = error
            finally:
                done.set()

        with self._wake:
            self._calls.put(call)
            self._wake.notify_all()
        if not done.wait(timeout):
            raise TimeoutError("the fake Revit main thread did not run the call")
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def open_modal_dialog(self) -> None:
        """Like a modal dialog or an edit mode: Revit is not idle, so external events wait."""
        with self._wake:
            self._modal = True

    def close_modal_dialog(self) -> None:
        with self._wake:
            self._modal = False
            self._wake.notify_all()

    def fail_event_handlers(self) -> None:
        """Like a handler that threw inside Revit: every external event is Denied from now on."""
        with self._wake:
            for event in self.external_events:
                event._denied = True

    def _raise(self, event: ui.ExternalEvent) -> Any:
        with self._wake:
            if event._disposed or event._denied:
                return ui.ExternalEventRequest.Denied
            if event._pending:
                return ui.ExternalEventRequest.Pending
            event._pending = True
            self._raised.append(event)
            self._wake.notify_all()
            return ui.ExternalEventRequest.Accepted

    def post_window_message(self, handle: int, message: int) -> bool:
        """user32 PostMessage to Revit's main window: its message loop wakes and then idles."""
        if handle != self.main_window_handle:
            return False
        with self._wake:
            self.main_window_messages.append(message)
            self._window_messages += 1
            self._wake.notify_all()
        return True

    main_window_handle = 0x2A0F1C

    # --- the UI thread's dispatcher -------------------------------------------------------------------

    def has_synchronization_context(self) -> bool:
        return self._ui_depth > 0

    def post_ui(self, callback: Any, *args: Any) -> None:
        """Dispatcher.BeginInvoke: runs later on the main thread, inside dispatcher work."""
        def call() -> None:
            self._ui_depth += 1
            try:
                callback(*args)
            finally:
                self._ui_depth -= 1
        with self._wake:
            self._calls.put(call)
            self._wake.notify_all()

    def run_frame(self, frame: Any) -> None:
        """Dispatcher.PushFrame: a nested message loop on the main thread until frame.Continue is False."""
        Session.check_api_context("Dispatcher.PushFrame")
        self._nested_loop(lambda: not frame.Continue)

    def answer_failures_dialog(self, texts: list[str]) -> bool:
        """Revit's modal failures dialog (forced modal handling): DialogBoxShowing may answer it (Cancel
        rolls back). False when nobody did: the dialog would wait for the person."""
        args = events.DialogBoxShowingEventArgs("Dialog_Revit_DocWarnDialog", (1, 2))
        self.uiapp.DialogBoxShowing.fire(self.uiapp, args)
        if args._overridden is None:
            return False
        self.dismissed_dialogs.append(("; ".join(texts), args._overridden))
        return True

    def show_task_dialog(self, message: str, buttons: tuple[int, ...]) -> int:
        """Revit showing one of its own TaskDialogs (main thread); `buttons` are its result codes (custom
        command links from 1001 up)."""
        args = events.TaskDialogShowingEventArgs("TaskDialog_Revit", message, tuple(buttons))
        self.uiapp.DialogBoxShowing.fire(self.uiapp, args)
        if args._overridden is None:
            self.task_dialogs.append(("task dialog", message))  # would block Revit until someone clicks
            return buttons[0]
        self.dismissed_dialogs.append((message, args._overridden))
        return args._overridden

    def run_modal(self, window: Any) -> None:
        """A modal window's nested loop (on the main thread, inside whatever showed it): timers tick and
        posted UI actions run until the window closes; external events wait, as in Revit."""
        Session.check_api_context("Window.ShowDialog")
        with self._wake:
            self._modal_windows += 1
        self.windows.append(window)
        try:
            self._nested_loop(lambda: window._closed)
        finally:
            with self._wake:
                self._modal_windows -= 1
                self._wake.notify_all()

    def _nested_loop(self, done: Any) -> None:
        self._ui_depth += 1
        try:
            while not done() and not self._stopped:
                call = None
                with self._wake:
                    if not self._calls.empty():
                        call = self._calls.get()
                if call is not None:
                    call()
                    continue
                now = time.monotonic()
                for timer in list(self.timers):
                    if timer.IsEnabled and now >= timer._due:
                        timer._due = now + timer.Interval.TotalSeconds
                        timer.Tick.fire(timer, None)
                with self._wake:
                    if self._calls.empty() and not done():
                        self._wake.wait(0.01)
        finally:
            self._ui_depth -= 1

    def _main_loop(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and self._calls.empty() and not self._idles():
                    self._wake.wait(0.5)
                if self._stopped:
                    return
                call = None if self._calls.empty() else self._calls.get()
                event = None
                if call is None and self._idles():
                    event = self._raised.pop(0)
                    event._pending = False
                    if self.user_idle:
                        self._window_messages -= 1
            if call is not None:
                call()
                for doc in list(self.documents):
                    doc._finish_pending()  # Revit idles after any API call returns
            elif event is not None:
                self.handler_runs += 1
                try:
                    event._handler.Execute(self.uiapp)
                except BaseException as error:  # noqa: BLE001 - in Revit this could take the session down
                    self.handler_crashes.append(repr(error))
                    event._denied = True  # Revit denies a failed handler's event from then on
                for doc in list(self.documents):
                    doc._finish_pending()

    def _idles(self) -> bool:
        """Revit runs raised external events when it idles: no modal dialog, and (while the user is away)
        only once a message woke its main window's loop."""
        if self._modal or not self._raised:
            return False
        return not self.user_idle or self._window_messages > 0

    # --- services used by the fake API -------------------------------------------------------------

    def _fire_document_changed(self, doc: db.Document, names: list[str], added: set[int], modified: set[int],
                               deleted: set[int], operation: str = "TransactionCommitted") -> None:
        args = events.DocumentChangedEventArgs(doc, names, [db.ElementId(i) for i in sorted(added)],
                                               [db.ElementId(i) for i in sorted(modified)],
                                               [db.ElementId(i) for i in sorted(deleted)])
        args.Operation = getattr(events.UndoOperation, operation)
        self.app.DocumentChanged.fire(self.app, args)

    def _write_image(self, path: str, size: tuple[int, int], extension: str) -> None:
        from PIL import Image, ImageDraw
        image = Image.new("RGB", size, "white")
        ImageDraw.Draw(image).rectangle([2, 2, size[0] - 3, size[1] - 3], outline="black", width=2)
        image.save(path, format={"png": "PNG", "bmp": "BMP", "tif": "TIFF"}.get(extension.strip("."), "JPEG"))


def _plain(value: Any) -> Any:
    return value._value if isinstance(value, db.ElementId) else value


def build_sample_model(doc: db.Document, levels: int = 3) -> None:
    """Levels with a rectangle of four walls each, two doors per level with marks, plan views, {3D},
    a schedule, a view template and a few uncategorised bookkeeping elements."""
    wall_type = doc._seed(db.WallType(doc, "Generic - 200mm", 0.656))
    doc._seed(db.WallType(doc, "Exterior - 300mm", 0.984))
    doc._default_wall_type = wall_type
    family = doc._seed(db.Family(doc, "Single-Flush"))
    door_type = doc._seed(db.FamilySymbol(doc, family, "0915 x 2134mm", db.BuiltInCategory.OST_Doors))
    corners = [(0.0, 0.0), (40.0, 0.0), (40.0, 30.0), (0.0, 30.0)]
    for number in range(1, levels + 1):
        level = doc._seed(db.Level(doc, "Level " + str(number), (number - 1) * 12.0))
        walls = []
        for index in range(4):
            start, end = corners[index], corners[(index + 1) % 4]
            curve = db.Line.CreateBound(db.XYZ(start[0], start[1], level.Elevation),
                                        db.XYZ(end[0], end[1], level.Elevation))
            walls.append(doc._seed(db.Wall(doc, curve, wall_type, level, 10.0)))
        for index in range(2):
            mark = f"L{number}-{index + 1:02d}"
            doc._seed(db.FamilyInstance(doc, door_type, walls[index], level, mark))
        doc._seed(db.ViewPlan(doc, level.Name, level))
    doc._seed(db.View3D(doc, "{3D}", (100.0, 100.0)))
    doc._seed(db.ViewSchedule(doc, "Door Schedule"))
    first_level = next(e for e in doc._elements.values() if isinstance(e, db.Level))
    doc._seed(db.ViewPlan(doc, "Architectural Plan", first_level, is_template=True))
    for _ in range(3):
        doc._seed(db.InternalElement(doc, ""))


def _module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


def _fake_modules(session: FakeRevit) -> dict[str, Any]:
    d = dotnet
    system = _module("System", EventHandler=d.EventHandler, Action=d.Action, Func=d.Func, Array=d.Array,
                     ArraySegment=d.ArraySegment, Byte=d.Byte, Int64=d.Int64, Guid=d.Guid, Uri=d.Uri, IntPtr=d.IntPtr,
                     TimeSpan=d.TimeSpan, AppDomain=d.AppDomain, AggregateException=d.AggregateException)
    modules: dict[str, Any] = {
        "clr": d.ClrModule(),
        "wpf": pyrevit_fake.WpfModule,
        "System": system,
        "System.Collections": _module("System.Collections"),
        "System.Collections.Generic": _module("System.Collections.Generic", List=d.List),
        "System.Diagnostics": _module("System.Diagnostics", Process=d.Process, ProcessStartInfo=d.ProcessStartInfo),
        "System.ComponentModel": _module("System.ComponentModel", Win32Exception=d.Win32Exception),
        "System.Text": _module("System.Text", Encoding=d.Encoding),
        "System.IO": _module("System.IO", MemoryStream=d.MemoryStream),
        "System.Threading": _module("System.Threading", CancellationTokenSource=d.CancellationTokenSource,
                                    CancellationToken=d.CancellationToken),
        "System.Threading.Tasks": _module("System.Threading.Tasks", Task=d.Task, TaskScheduler=d.TaskScheduler),
        "System.Net": _module("System.Net", WebRequest=d.WebRequest, CredentialCache=d.CredentialCache),
        "System.Net.WebSockets": _module(
            "System.Net.WebSockets", ClientWebSocket=d.ClientWebSocket, WebSocketMessageType=d.WebSocketMessageType,
            WebSocketState=d.WebSocketState, WebSocketCloseStatus=d.WebSocketCloseStatus,
            WebSocketException=d.WebSocketException),
        "System.Windows": _module("System.Windows", Visibility=d.Visibility),
        "System.Windows.Threading": _module("System.Windows.Threading", DispatcherTimer=d.DispatcherTimer,
                                            Dispatcher=d.Dispatcher, DispatcherFrame=d.DispatcherFrame),
        "Autodesk": _module("Autodesk"),
        "Autodesk.Revit": _module("Autodesk.Revit"),
        "Autodesk.Revit.DB": db,
        "Autodesk.Revit.DB.Events": events,
        "Autodesk.Revit.UI": ui,
        "Autodesk.Revit.UI.Events": events,
        "Autodesk.Revit.ApplicationServices": appservices,
        "Autodesk.Revit.Exceptions": exceptions,
        "pyrevit": _module("pyrevit", HOST_APP=pyrevit_fake.HOST_APP, PyRevitException=pyrevit_fake.PyRevitException),
        "pyrevit.forms": _module(
            "pyrevit.forms", WPFPanel=pyrevit_fake.WPFPanel, alert=pyrevit_fake.alert,
            ask_for_string=pyrevit_fake.ask_for_string, register_dockable_panel=pyrevit_fake.register_dockable_panel,
            is_registered_dockable_panel=pyrevit_fake.is_registered_dockable_panel,
            open_dockable_panel=pyrevit_fake.open_dockable_panel, WPFWindow=pyrevit_fake.WPFWindow),
        "pyrevit.script": _module("pyrevit.script", toggle_icon=pyrevit_fake.toggle_icon),
        "pyrevit.userconfig": _module("pyrevit.userconfig", user_config=pyrevit_fake.USER_CONFIG),
    }
    if not session.missing_assemblies:
        modules.update({
            "Microsoft": _module("Microsoft"),
            "Microsoft.Web": _module("Microsoft.Web"),
            "Microsoft.Web.WebView2": _module("Microsoft.Web.WebView2"),
            "Microsoft.Web.WebView2.Core": _module(
                "Microsoft.Web.WebView2.Core", CoreWebView2Environment=d.CoreWebView2Environment,
                CoreWebView2EnvironmentOptions=d.CoreWebView2EnvironmentOptions),
            "Microsoft.Web.WebView2.Wpf": _module("Microsoft.Web.WebView2.Wpf", WebView2=d.WebView2),
        })
    # parents expose their children as attributes, as `from Autodesk.Revit import DB` needs
    for name in sorted(modules):
        parent, _, child = name.rpartition(".")
        if parent in modules:
            setattr(modules[parent], child, modules[name])
    return modules


class _PostMessageW:
    argtypes: Any = None
    restype: Any = None

    def __call__(self, handle: Any, message: int, wparam: Any, lparam: Any) -> int:
        value = getattr(handle, "value", handle)
        return int(Session.world.post_window_message(int(value or 0), int(message)))


class _User32:
    def __init__(self) -> None:
        self.PostMessageW = _PostMessageW()


class FakeWindll:
    """ctypes.windll on Windows: only user32.PostMessageW, delivered to the fake Revit's main window."""

    def __init__(self) -> None:
        self.user32 = _User32()


_saved: dict[str, Any] | None = None


def install(session: FakeRevit) -> FakeRevit:
    """Put the fake modules into sys.modules (replacing the stub packages) for `session`."""
    global _saved
    if _saved is None:
        _saved = {k: v for k, v in sys.modules.copy().items() if k.split(".")[0] in _FAKED_ROOTS}
    for key in [k for k in sys.modules.copy() if k.split(".")[0] in _FAKED_ROOTS]:
        sys.modules.pop(key, None)
    sys.modules.update(_fake_modules(session))
    ctypes.windll = FakeWindll()  # type: ignore[attr-defined]  # Windows' DLLs, as IronPython's ctypes has them
    Session.world = session
    return session


def uninstall() -> None:
    global _saved
    if isinstance(getattr(ctypes, "windll", None), FakeWindll):
        del ctypes.windll
    for key in [k for k in sys.modules.copy() if k.split(".")[0] in _FAKED_ROOTS]:
        sys.modules.pop(key, None)
    if _saved is not None:
        sys.modules.update(_saved)
    _saved = None
    Session.main_thread = None
