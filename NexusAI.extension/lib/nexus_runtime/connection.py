"""The outbound websocket to the cloud, on a background thread: connect, hello, serve, reconnect.

Nothing on this thread touches the Revit API or WPF: what the hello says comes from a HostInfo snapshot
kept by the main thread, and commands are handed to a router that queues them for the main thread.
Replies that cannot be sent because the link is down are kept (bounded) and sent after the next
welcome; the hello then carries the previous host_id so the cloud keeps routing to this Revit.

Two locks: `_send_lock` lets one sender at a time onto the socket; `_state_lock` guards which transport
is current. Dropping the link (Disconnect, new settings, a pyRevit reload: Revit's UI thread) takes only
the state lock and aborts the socket outside any lock, so a send stuck in a stalled network never
freezes Revit; the abort is what unblocks that send. A heartbeat pings the server every `heartbeat_s`;
a link that brings nothing back for DEAD_AFTER_HEARTBEATS of them is half-open and is dropped.

How a closed link is followed up, like the IFC host (close codes from the server's host_sockets.py):
- 4401, the token was revoked while connected: no reconnect (it would only meet a 401); the state becomes
  REFUSED until the settings change or the person presses Connect again.
- 4409, another connection took this host id over (NexusAI connected with this id elsewhere): no reconnect,
  which would take the id back and close the other in turn; the state becomes REPLACED until Connect.
- anything else: reconnect with capped exponential backoff and jitter. A refused handshake (HTTP 401) is
  retried too: the person fixes the token in Settings, which reconnects at once.
`reconnect_now` (new settings, Connect) always starts a fresh attempt that reads the settings anew: an
attempt that read them before the call is abandoned before it connects (a generation count).
"""
import itertools
import threading
from collections import deque

from nexus_runtime import protocol
from nexus_runtime.backoff import Backoff
from nexus_runtime.jobs import monotonic
from nexus_runtime.settings import websocket_url
from nexus_runtime.transport import TransportClosed

DISCONNECTED = "disconnected"
NOT_CONFIGURED = "not configured"
CONNECTING = "connecting"
CONNECTED = "connected"
STOPPED = "stopped"
REFUSED = "refused"
REPLACED = "replaced"

CLOSE_TOKEN_REVOKED = 4401
CLOSE_HOST_ID_TAKEN = 4409

_KEPT_FOR_LATER = ("execute_result", "export_view_result", "doctor_result")
DEAD_AFTER_HEARTBEATS = 3


class HelloRefused(Exception):
    pass


class _Superseded(Exception):
    """reconnect_now was called after this attempt read the settings: it gives way to a fresh one."""


class HostConnection(object):
    def __init__(self, transport_factory, settings_provider, host_info, log,
                 backoff=None, connect_timeout_s=10.0, max_outbox=20):
        self._transport_factory = transport_factory
        self._settings_provider = settings_provider
        self._host_info = host_info
        self._log = log
        self._backoff = backoff or Backoff(1.0, 30.0)
        self._connect_timeout_s = connect_timeout_s
        self._on_message = None
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._transport = None
        self._last_inbound = monotonic()
        self._dead_link = None
        self._nonces = itertools.count(1)
        self._outbox = deque(maxlen=max_outbox)
        self._stop = threading.Event()
        self._stop.set()  # not started yet
        self._wake = threading.Event()
        self._thread = None
        self._generation = 0
        self.state = DISCONNECTED
        self.host_id = None
        self.last_error = None
        self.connected_count = 0

    def set_message_handler(self, on_message):
        """`on_message(text)` is called on the connection thread for every inbound message."""
        self._on_message = on_message

    def start(self):
        """Start serving on a new thread (a previous one, if still winding down, keeps its own stop flag)."""
        if self._thread is not None and self._thread.is_alive() and not self._stop.is_set():
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(self._stop,), name="NexusAI connection")
        self._thread.daemon = True
        self._thread.start()

    def stop(self, timeout_s=5.0):
        self._stop.set()
        self._wake.set()
        self._drop_transport(None)
        if self._thread is not None:
            self._thread.join(timeout_s)
        self.state = STOPPED

    def reconnect_now(self):
        """Drop the link and skip the backoff wait (e.g. after the settings changed): the next attempt reads
        the settings after this call, even when one was about to connect with the old ones."""
        with self._state_lock:
            self._generation += 1
        self._wake.set()
        self._drop_transport(None)

    def gave_up(self):
        """True when the server ended the link for good (REFUSED, REPLACED): only start() reconnects."""
        thread = self._thread
        return self.state in (REFUSED, REPLACED) and (thread is None or not thread.is_alive())

    def send(self, message):
        """Send one message (one sender at a time). Results are kept for later if the link is down."""
        text = protocol.encode(message)
        with self._send_lock:
            transport = self._transport
            if transport is not None and self.state == CONNECTED:
                try:
                    transport.send_text(text)
                    return True
                except Exception as exc:
                    self._log.write("send failed: {0}".format(exc))
            if message.get("type") in _KEPT_FOR_LATER:
                self._outbox.append(text)
            return False

    def _run(self, stop):
        while not stop.is_set():
            with self._state_lock:
                generation = self._generation
            settings = self._settings_provider()
            if not settings.is_complete():
                self._set_state(stop, NOT_CONFIGURED)
                self._wait(5.0)
                continue
            transport = self._transport_factory()
            final = None
            try:
                self._serve_once(settings, transport, stop, generation)
            except _Superseded:
                continue  # settings changed (or Connect) before it connected: read them again, no wait
            except TransportClosed as closed:
                final = self._closed_for_good(closed)
                if final is None:
                    self.last_error = "the server closed the connection" + _code_text(closed)
            except Exception as exc:
                self.last_error = str(exc) or exc.__class__.__name__
            finally:
                self._drop_transport(transport)
            if self._dead_link:  # the heartbeat dropped the link: say why, not how the receive ended
                self.last_error, self._dead_link = self._dead_link, None
            if stop.is_set():
                break
            if final is not None:
                with self._state_lock:
                    if generation == self._generation:  # no new settings or Connect meanwhile
                        self._set_state(stop, final)
                        self._log.write("{0}; not reconnecting".format(self.last_error))
                        return
                continue
            delay = self._backoff.next_delay()
            self._log.write("disconnected ({0}); reconnecting in {1:.1f} s".format(self.last_error, delay))
            self._wait(delay)

    def _closed_for_good(self, closed):
        """REFUSED or REPLACED (with last_error saying why) when the server's close code means a reconnect
        cannot help; None otherwise."""
        code = getattr(closed, "code", None)
        if code == CLOSE_TOKEN_REVOKED:
            self.last_error = ("the server revoked this token (close code 4401): set a new token in "
                               "NexusAI > Settings")
            return REFUSED
        if code == CLOSE_HOST_ID_TAKEN:
            self.last_error = ("another connection took host id {0} over (close code 4409): NexusAI is connected "
                               "with this id elsewhere; press Connect to take it back here").format(self.host_id)
            return REPLACED
        return None

    def _serve_once(self, settings, transport, stop, generation=None):
        with self._state_lock:
            if stop.is_set():
                return
            if generation is not None and generation != self._generation:
                raise _Superseded()
            self._transport = transport
            self.state = CONNECTING
        transport.connect(websocket_url(settings.server_url),
                          {"Authorization": "Bearer " + settings.token}, self._connect_timeout_s)
        self._last_inbound = monotonic()
        heartbeat = threading.Thread(target=self._heartbeat, args=(transport, stop, float(settings.heartbeat_s)),
                                     name="NexusAI heartbeat")
        heartbeat.daemon = True
        heartbeat.start()
        info = self._host_info.snapshot()
        hello = protocol.hello(info["host_version"], info["python_version"], info["document_title"], self.host_id)
        with self._send_lock:
            transport.send_text(protocol.encode(hello))
        self._await_welcome(transport, stop)
        self._backoff.reset()
        self.last_error = None
        self._log.write("connected as host {0}".format(self.host_id))
        while not stop.is_set():
            self._deliver(self._receive(transport))

    def _receive(self, transport):
        text = transport.receive_text()
        self._last_inbound = monotonic()
        return text

    def _heartbeat(self, transport, stop, interval_s):
        """Ping the server (once welcomed); drop the link when nothing at all came back for
        DEAD_AFTER_HEARTBEATS heartbeats, the handshake included."""
        while self._transport is transport and not stop.wait(interval_s):
            if self._transport is not transport:
                return
            silent_s = monotonic() - self._last_inbound
            if silent_s > DEAD_AFTER_HEARTBEATS * interval_s:
                self._dead_link = "the server went silent for {0:.1f} s (a half-open connection)".format(silent_s)
                self._log.write(self._dead_link + "; reconnecting")
                self._drop_transport(transport)
                return
            if self.state == CONNECTED:
                self.send(protocol.ping("hb{0}".format(next(self._nonces))))

    def _await_welcome(self, transport, stop):
        while True:
            message = protocol.decode(self._receive(transport))
            if message["type"] == "welcome":
                with self._send_lock:
                    with self._state_lock:
                        self.host_id = message.get("host_id") or self.host_id
                        self._set_state(stop, CONNECTED)
                        self.connected_count += 1  # before the kept results go out: they belong to this link
                    while self._outbox:
                        transport.send_text(self._outbox[0])
                        self._outbox.popleft()
                return
            if message["type"] == "error":
                raise HelloRefused("the server refused the hello: " + str(message.get("message")))
            self._deliver(protocol.encode(message))

    def _deliver(self, text):
        handler = self._on_message
        if handler is None:
            return
        try:
            handler(text)
        except Exception as exc:  # one bad message must not end the connection
            self._log.write("message handler failed: {0}".format(exc))

    def _drop_transport(self, transport):
        """Close `transport` (None: whichever is current) and forget it if it is the current one. Never
        waits for a sender: the close (an abort) happens outside every lock and ends a stuck send."""
        with self._state_lock:
            if transport is None:
                transport = self._transport
            if transport is not None and transport is self._transport:
                self._transport = None
                self.state = STOPPED if self._stop.is_set() else DISCONNECTED
        if transport is not None:
            try:
                transport.close()
            except Exception as exc:
                self._log.write("close failed: {0}".format(exc))

    def _set_state(self, stop, state):
        # A thread that was told to stop may still be winding down: it no longer owns the state.
        if stop is self._stop and not stop.is_set():
            self.state = state

    def _wait(self, seconds):
        self._wake.wait(seconds)
        self._wake.clear()


def _code_text(closed):
    code = getattr(closed, "code", None)
    return "" if code is None else " (close code {0})".format(code)
