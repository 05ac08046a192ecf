"""Inbound cloud messages -> replies. A command goes to the main-thread dispatcher on a worker thread,
so the connection thread keeps reading (pings, further commands) while Revit works; a second command
while one is in flight is refused as busy, except the read-only ones a held run serves while it waits
(export_view for the preview image, context, show_elements for the pane's "Show in Revit"). A `decide` goes to the held run it names: it is the only
message that can keep or discard a held change. A `doctor` first checks the network from its worker
thread, then runs the Revit checks on the main thread like any other job. An `abort` (the run was cancelled)
abandons the job if Revit has not picked it up, stops a running script at its next checkpoint (aborts.py;
its transaction is rolled back and its result says so), discards a held change, and otherwise is answered
`aborted` (state none)."""
import threading

from nexus_runtime import holds, protocol

CHECKS = {"execute": protocol.check_execute, "export_view": protocol.check_export_view,
          "context": protocol.check_context, "doctor": protocol.check_doctor,
          "show_elements": protocol.check_show_elements}
CONTEXT_PICKUP_S = 5.0  # the cloud waits briefly for a context snapshot, then goes on without one
SHOW_PICKUP_S = 10.0  # a person clicked "Show in Revit": a late selection would only surprise them
BUSY_WITH_ANOTHER = ("Revit is busy with another NexusAI request ({0}); one runs at a time. "
                     "Try again when it has finished.")
NOTHING_HELD = "no automation is held for this request"


class CommandRouter(object):
    def __init__(self, dispatcher, send, log, busy_after_s, held_runs, network_check=None, aborts=None):
        self._dispatcher = dispatcher
        self._network_check = network_check  # () -> the Doctor's "server" row (background thread)
        self._send = send
        self._log = log
        self._busy_after_s = busy_after_s  # callable: seconds a command may wait for Revit to be idle
        self._held_runs = held_runs
        self._aborts = aborts  # the running scripts' AbortFlags (run_services.RunServices.aborts)
        self._in_flight = set()
        self._lock = threading.Lock()

    def handle(self, text):
        try:
            message = protocol.decode(text)
        except protocol.ProtocolError as exc:
            self._send(protocol.error("malformed message: " + str(exc)))
            return
        kind = message["type"]
        if kind == "ping":
            self._send(protocol.pong(message.get("nonce")))
        elif kind in CHECKS:
            self._accept_command(message)
        elif kind == "decide":
            self._decide(message)
        elif kind == "abort":
            self._abort(message)
        elif kind == "error":
            self._log.write("the server reported: {0}".format(message.get("message")))
        elif kind not in ("pong", "welcome"):
            self._send(protocol.error("unsupported message type: " + kind, message.get("request_id")))

    def _accept_command(self, message):
        try:
            CHECKS[message["type"]](message)
        except protocol.ProtocolError as exc:
            self._send(protocol.error("invalid {0}: {1}".format(message["type"], exc), message.get("request_id")))
            return
        request_id = message["request_id"]
        alongside_hold = message["type"] in holds.SERVED_WHILE_HELD and self._held_runs.waiting()
        with self._lock:
            running = sorted(self._in_flight)
            refused = bool(running) and not alongside_hold
            if not refused:
                self._in_flight.add(request_id)
        if refused:
            # One job at a time: queueing behind a long run would only make this caller time out later.
            self._send(protocol.error(BUSY_WITH_ANOTHER.format(running[0]), request_id))
            return
        worker = threading.Thread(target=self._serve, args=(message,), name="NexusAI job " + request_id)
        worker.daemon = True
        worker.start()

    def _serve(self, message):
        pickup_timeout = float(self._busy_after_s())
        if message["type"] == "execute":
            pickup_timeout = min(pickup_timeout, float(message["timeout_s"]))
        elif message["type"] == "context":
            pickup_timeout = min(pickup_timeout, CONTEXT_PICKUP_S)
        elif message["type"] == "show_elements":
            pickup_timeout = min(pickup_timeout, SHOW_PICKUP_S)
        try:
            if message["type"] == "doctor" and self._network_check is not None:
                message = dict(message, network=self._network_check())
            reply = self._dispatcher.serve(message, pickup_timeout)
        except Exception as exc:
            reply = protocol.failed_reply_for(message, "RuntimeFault", str(exc))
        finally:
            with self._lock:
                self._in_flight.discard(message["request_id"])
        if reply is not None:  # None: a held run's final result, sent when the cloud's decide arrives
            self._send(reply)

    def _abort(self, message):
        request_id = message.get("request_id")
        if not isinstance(request_id, protocol.STRING_TYPES) or not request_id:
            self._send(protocol.error("invalid abort: request_id: required, a non-empty string"))
            return
        queued = self._dispatcher.queue.find(request_id)
        if queued is not None and self._dispatcher.abandon_queued(request_id, protocol.cancelled_reply_for(queued.message)):
            self._log.write("request {0} aborted before Revit picked it up".format(request_id))
            return  # its worker sends the cancelled reply
        if self._aborts is not None and self._aborts.abort(request_id):
            self._log.write("request {0} aborted: the script stops at its next checkpoint".format(request_id))
            return  # the script's own result (cancelled, rolled back) answers
        outcome, final = self._held_runs.on_decide(request_id, holds.DISCARD)
        if outcome == holds.NOW:
            self._send(final)
        elif outcome == holds.UNKNOWN:
            self._send(protocol.aborted(request_id, "nothing to abort: request {0} is not queued, running or "
                                                    "held in Revit".format(request_id)))

    def _decide(self, message):
        request_id = message.get("request_id")
        outcome, final = self._held_runs.on_decide(request_id, message.get("decision"))
        if outcome == holds.UNKNOWN:
            self._send(protocol.error(NOTHING_HELD, request_id))
        elif outcome == holds.NOW:
            self._send(final)
