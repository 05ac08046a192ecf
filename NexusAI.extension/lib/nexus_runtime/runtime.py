"""The NexusAI runtime of one Revit session: settings, job dispatch, the external event, the connection.

Created by startup.py on Revit's main thread (ExternalEvent.Create needs an API context) and kept in the
AppDomain (registry.py) so buttons and pyRevit reloads find the same object. Revit-facing.
"""
import itertools
import os
import tempfile
import threading

from Autodesk.Revit.UI.Events import ViewActivatedEventArgs
from System import EventHandler

from nexus_runtime import doctor, registry
from nexus_runtime.connection import CONNECTED, HostConnection
from nexus_runtime.dispatch import Dispatcher
from nexus_runtime.event_handler import create_job_event
from nexus_runtime.external_tracking import ExternalChangeTracker
from nexus_runtime.holds import SERVED_WHILE_HELD
from nexus_runtime.host_info import HostInfo
from nexus_runtime.log import RuntimeLog
from nexus_runtime.main_window import main_window_waker
from nexus_runtime.revit_jobs import make_job_runner
from nexus_runtime.router import CommandRouter
from nexus_runtime.run_services import RunServices
from nexus_runtime.sender import BackgroundSender
from nexus_runtime.settings import chat_url


class NexusRuntime(object):
    def __init__(self, uiapp, settings_store, transport_factory, log):
        self.log = log
        self.settings_store = settings_store
        self.settings = settings_store.load()
        self.revit_version = str(uiapp.Application.VersionNumber)
        self.host_info = HostInfo(host_version=host_version(uiapp.Application))
        self.refresh_host_info(uiapp)
        self.connection = HostConnection(transport_factory, self._current_settings, self.host_info, log)
        self.sender = BackgroundSender(self.connection.send, log)
        self.services = RunServices(log, self._current_settings, send=self.sender.send)
        self.dispatcher = Dispatcher(make_job_runner(log, self.services), log=log,
                                     default_pickup_timeout_s=self.settings.busy_after_s)
        self.services.attach_pump(lambda context: self.dispatcher.drain(context, SERVED_WHILE_HELD))
        self.handler, self.event = create_job_event(self.dispatcher, log, main_window_waker(uiapp, log))
        self._transport_factory = transport_factory
        self._doctor_runs = itertools.count(1)
        self.router = CommandRouter(self.dispatcher, self.connection.send, log, self._busy_after_s,
                                    self.services.holds, network_check=self._doctor_network_check,
                                    aborts=self.services.aborts)
        self.connection.set_message_handler(self.router.handle)
        self.external_tracker = ExternalChangeTracker(uiapp.Application, self.services, log)
        self.external_tracker.start()
        self._wanted = False
        self._uiapp = uiapp
        self._view_activated = EventHandler[ViewActivatedEventArgs](self._on_view_activated)
        uiapp.ViewActivated += self._view_activated

    def _current_settings(self):
        return self.settings

    def _busy_after_s(self):
        return self.settings.busy_after_s

    # main thread --------------------------------------------------------------------------------------

    def refresh_host_info(self, uiapp):
        uidoc = uiapp.ActiveUIDocument
        self.host_info.update(document_title=uidoc.Document.Title if uidoc is not None else None)

    def _on_view_activated(self, sender, args):
        try:
            self.host_info.update(document_title=args.Document.Title if args.Document is not None else None)
        except Exception as exc:
            self.log.write("ViewActivated handler failed: {0}".format(exc))

    def connect(self):
        self._wanted = True
        self.connection.start()

    def disconnect(self):
        self._wanted = False
        self.connection.stop(1.0)

    def toggle_connection(self):
        if self._wanted and not self.connection.gave_up():  # after a 4401/4409 close, Connect connects again
            self.disconnect()
        else:
            self.connect()

    def update_settings(self, settings):
        self.settings_store.save(settings)
        self.settings = settings
        self.dispatcher.default_pickup_timeout_s = float(settings.busy_after_s)
        if self._wanted:
            self.connection.reconnect_now()
            self.connection.start()  # the connection thread ended if the server closed the link for good

    def shutdown(self):
        self.disconnect()
        try:
            self._uiapp.ViewActivated -= self._view_activated
            self.external_tracker.stop()
        finally:
            self.event.Dispose()
            self.sender.stop()

    def run_doctor_for_person(self):
        """The Doctor button: checks in the background, then on the main thread (through the ExternalEvent,
        which is one of the checks), where the table is shown and the report sent to the server."""
        worker = threading.Thread(target=self._doctor_in_background, name="NexusAI doctor")
        worker.daemon = True
        worker.start()
        return worker

    # any thread --------------------------------------------------------------------------------------

    def _doctor_network_check(self):
        return doctor.network_check(self.settings, self._transport_factory)

    def _doctor_in_background(self):
        try:
            message = {"type": "doctor", "request_id": "doctor-{0}".format(next(self._doctor_runs)), "show": True,
                       "network": self._doctor_network_check()}
            reply = self.dispatcher.serve(message)
            if reply.get("type") != "doctor_result":
                self.log.write("the Doctor could not run in Revit: {0}".format(reply.get("message")))
        except Exception as exc:  # a background thread must never throw into Revit
            self.log.write("the Doctor failed: {0}".format(exc))

    def status(self):
        connection = self.connection
        state = connection.state
        host_id = connection.host_id if state == CONNECTED else None
        url = chat_url(self.settings.server_url, host_id) if self.settings.server_url else None
        if not self.settings.is_complete():
            summary = "Not configured: set the server URL and token in NexusAI > Settings."
        elif state == CONNECTED:
            summary = "Connected to {0} as host {1}.".format(self.settings.server_url, host_id)
        elif self._wanted and connection.gave_up():
            summary = "Not connected: {0}.".format(connection.last_error)
        elif self._wanted:
            summary = "Connecting to {0}... {1}".format(self.settings.server_url, connection.last_error or "")
        else:
            summary = "Disconnected."
        if self.dispatcher.denied:
            summary = "Revit refuses NexusAI's requests (its event handler failed): reload pyRevit or restart Revit."
        holding = self.services.holds.waiting()
        if holding:
            summary += " A change is held: keep or discard it in Revit's review window or in the chat."
        # After a 4401/4409 close the buttons offer Connect again (see toggle_connection).
        wanted = self._wanted and not connection.gave_up()
        return {"state": state, "wanted": wanted, "host_id": host_id, "chat_url": url,
                "last_error": connection.last_error, "summary": summary.strip(),
                "queued_jobs": len(self.dispatcher.queue), "holding": holding}


def host_version(application):
    return "{0} ({1})".format(application.VersionNumber, application.VersionBuild)


def default_log():
    folder = os.path.join(os.environ.get("APPDATA") or tempfile.gettempdir(), "NexusAI")
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder)
        return RuntimeLog(os.path.join(folder, "runtime.log"))
    except (IOError, OSError):
        return RuntimeLog()


def start(uiapp, transport_factory=None, settings_store=None, log=None):
    """startup.py: replace any runtime left by an earlier load, and connect if configured to."""
    previous = registry.current_runtime()
    if previous is not None:
        try:
            previous.shutdown()
        except Exception:
            pass  # a runtime from an earlier pyRevit load may be half torn down already
    if transport_factory is None:
        from nexus_runtime.transport_clientwebsocket import ClientWebSocketTransport
        transport_factory = ClientWebSocketTransport
    if settings_store is None:
        from nexus_runtime.config_store import PyRevitSettingsStore
        settings_store = PyRevitSettingsStore()
    runtime = NexusRuntime(uiapp, settings_store, transport_factory, log or default_log())
    registry.set_runtime(runtime)
    if runtime.settings.auto_connect and runtime.settings.is_complete():
        runtime.connect()
    return runtime
