"""The IFC host runtime: a websocket client that serves the host protocol for one IFC model.

It connects to the orchestrator's `/ws/host`, says hello (with its previous host id after a reconnect),
and answers commands. Scripts run one at a time in the model keeper (see executor.py); a second `execute`
while one runs is refused with an `error` reply rather than queued, because the cloud waits for each result
before sending the next script. Plan images render in their own process. Pings and aborts are acted on at
once, even while a script runs: an `abort` kills the running script (rolled back; its execute_result says it
was cancelled), discards a held automation, or is answered `aborted` (state none) when nothing matches.

When the connection drops, what happens next depends on why (the server's close codes are in
cloud/web/host_sockets.py):
- the token is refused (HTTP 401/403 at the handshake, or close code 4401: revoked while connected): the host
  stops at once with HostRejected; retrying with the same token could never succeed.
- close code 4409: another connection took this host id over (a second host started for the same id). The
  host stops with HostReplaced instead of reconnecting: reconnecting would take the id back and close the
  other host in turn, and two hosts would fight over one id (and possibly one model file) for ever.
- anything else (a network drop, a server restart, a close without a code): reconnect with capped exponential
  backoff and jitter (ReconnectPolicy), until stopped; a connection that got as far as a welcome resets it.
"""
from __future__ import annotations

import base64
import json
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import websocket

from ifc_host import protocol
from ifc_host.executor import DEFAULT_HOLD_TIMEOUT_S, IsolatedExecutor
from ifc_host.keeper_process import LaunchedKeeper
from ifc_host.scene_export import BeforeCopies, HeldSnapshot
from shared_contract.host_messages import Decide, ExecuteCommand
from shared_contract.validate import ContractError, content_hash

log = logging.getLogger("nexus.ifc_host")

HOST_PATH = "/ws/host"
CONNECT_TIMEOUT_S = 10.0
HEARTBEAT_S = 20.0
MAX_PENDING_REPLIES = 32


CLOSE_TOKEN_REFUSED = 4401  # the server's close code when the host's token was revoked
CLOSE_HOST_ID_TAKEN = 4409  # the server's close code when a newer connection took this host id over


class HostRejected(RuntimeError):
    """The orchestrator refused this host (bad or revoked token): retrying would not help."""


class HostReplaced(RuntimeError):
    """Another connection took this host's id over (close code 4409): this host stops rather than fight it."""


class ConnectionEnded(Exception):
    """The server closed the websocket with a close frame: its status code (None without one) and reason."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"closed by the server (code {code}{': ' + reason if reason else ''})")
        self.code, self.reason = code, reason


def close_frame(data: bytes) -> ConnectionEnded:
    """The status code and reason of a close frame's payload (RFC 6455, 5.5.1)."""
    if len(data) < 2:
        return ConnectionEnded(None, "")
    return ConnectionEnded(int.from_bytes(data[:2], "big"), data[2:].decode("utf-8", errors="replace"))


def stop_for(ended: ConnectionEnded, host_id: str | None = None) -> RuntimeError | None:
    """The error that ends the host for this close, or None when it should reconnect."""
    if ended.code == CLOSE_TOKEN_REFUSED:
        return HostRejected(f"the server revoked this host's token ({ended.reason or 'code 4401'}); "
                            "start the host again with a valid token")
    if ended.code == CLOSE_HOST_ID_TAKEN:
        return HostReplaced(f"another connection took this host id ({host_id}) over ({ended.reason or 'code 4409'}); "
                            "this host stops so the two do not take the id from each other in turn")
    return None


@dataclass(frozen=True)
class ReconnectPolicy:
    first_delay_s: float = 0.5
    max_delay_s: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2

    def delays(self) -> Iterator[float]:
        delay = self.first_delay_s
        while True:
            yield delay * random.uniform(1 - self.jitter, 1 + self.jitter)
            delay = min(self.max_delay_s, delay * self.factor)


def websocket_url(server_url: str) -> str:
    """http(s)://host[:port][/prefix] -> ws(s)://host[:port][/prefix]/ws/host (a ws(s) URL is used as given)."""
    parts = urlsplit(server_url.strip())
    if parts.scheme in ("ws", "wss"):
        return server_url
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"server URL must look like http://host:port, got {server_url!r}")
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + HOST_PATH, "", ""))


class HostRuntime:
    """Serves one model over one websocket at a time; survives disconnects, bad messages and bad scripts."""

    def __init__(self, executor: IsolatedExecutor, server_url: str, token: str,
                 reconnect: ReconnectPolicy | None = None, render_timeout_s: float = 60.0) -> None:
        self.executor = executor
        self.ws_url = websocket_url(server_url)
        self.token = token
        self.reconnect = reconnect or ReconnectPolicy()
        self.render_timeout_s = render_timeout_s
        self.host_id: str | None = None
        self.connected = threading.Event()
        self.connections = 0  # how many times a welcome was received (tests and logs)
        self._ws: websocket.WebSocket | None = None
        self._send_lock = threading.Lock()
        self._job_lock = threading.Lock()
        self._view_lock = threading.Lock()
        self._pending: deque[dict[str, Any]] = deque(maxlen=MAX_PENDING_REPLIES)
        self._workers: set[threading.Thread] = set()
        self.before_copies = BeforeCopies()
        self.held_snapshot = HeldSnapshot()  # one file per hold for its scenes and views (scene_export.py)

    # --- connection loop ---------------------------------------------------------------------------
    def serve(self, stop: threading.Event) -> None:
        """Connect, serve, reconnect with backoff, until `stop` is set. Raises HostRejected when the token is
        refused (HTTP 401/403, close code 4401) and HostReplaced on close code 4409 (see the module's doc)."""
        watcher = threading.Thread(target=self._close_on_stop, args=(stop,), name="ifc-host-stop", daemon=True)
        watcher.start()
        self._prepare_views()
        delays = self.reconnect.delays()
        while not stop.is_set():
            try:
                ws = websocket.create_connection(
                    self.ws_url, timeout=CONNECT_TIMEOUT_S, header=[f"Authorization: Bearer {self.token}"],
                    enable_multithread=True, skip_utf8_validation=True)  # json.loads rejects bad text anyway
            except websocket.WebSocketBadStatusException as exc:
                if exc.status_code in (401, 403):
                    raise HostRejected(f"the server refused this host's token (HTTP {exc.status_code})") from exc
                log.warning("connecting to %s failed: %s", self.ws_url, exc)
            except (OSError, websocket.WebSocketException) as exc:
                log.warning("connecting to %s failed: %s", self.ws_url, exc)
            else:
                if self._serve_connection(ws, stop):
                    delays = self.reconnect.delays()
            if stop.is_set():
                break
            delay = next(delays)
            log.info("reconnecting in %.1f s", delay)
            stop.wait(delay)

    def _close_on_stop(self, stop: threading.Event) -> None:
        stop.wait()
        self._drop_connection()

    def _serve_connection(self, ws: websocket.WebSocket, stop: threading.Event) -> bool:
        """Serve one connection until it drops; True if it got as far as a welcome."""
        ws.settimeout(None)
        with self._send_lock:
            self._ws = ws
        welcomed = False
        heartbeat_stop = threading.Event()
        try:
            if stop.is_set():
                return False
            self._send(protocol.hello(self._document(), self.host_id, self.executor.ifcopenshell_version), queue_if_down=False)
            threading.Thread(target=self._heartbeat, args=(heartbeat_stop,), name="ifc-host-heartbeat",
                             daemon=True).start()
            while not stop.is_set():
                opcode, data = ws.recv_data()
                if opcode == websocket.ABNF.OPCODE_CLOSE:
                    raise close_frame(data)
                if opcode not in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                    continue
                if self._handle(data):
                    welcomed = True
        except ConnectionEnded as ended:
            if not stop.is_set():
                final = stop_for(ended, self.host_id)
                if final is not None:
                    log.error("%s", final)
                    raise final from None
                log.warning("connection to %s %s", self.ws_url, ended)
        except (OSError, websocket.WebSocketException) as exc:
            if not stop.is_set():
                log.warning("connection to %s lost: %s", self.ws_url, exc)
        finally:
            heartbeat_stop.set()
            self.connected.clear()
            self._drop_connection()
        return welcomed

    def _drop_connection(self) -> None:
        with self._send_lock:
            ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close(timeout=1)
            except (OSError, websocket.WebSocketException):
                pass
            ws.shutdown()  # close() leaves the socket open when the peer closed first

    def _heartbeat(self, done: threading.Event) -> None:
        # Keeps idle proxies from closing the socket, and makes a dead connection fail a send.
        while not done.wait(HEARTBEAT_S):
            self._send({"type": "ping"}, queue_if_down=False)

    def _document(self) -> dict[str, Any]:
        document = dict(self.executor.document)
        document["path"] = str(self.executor.model_path)
        if self.executor.save_path != self.executor.model_path:
            document["saved_to"] = str(self.executor.save_path)
        return document

    # --- sending -------------------------------------------------------------------------------------
    def _send(self, message: dict[str, Any], queue_if_down: bool = True) -> None:
        text = websocket_json(message)
        with self._send_lock:
            ws = self._ws
            if ws is not None:
                try:
                    ws.send(text)
                    return
                except (OSError, websocket.WebSocketException) as exc:
                    log.warning("sending %s failed: %s", message.get("type"), exc)
                    ws.shutdown()  # a broken connection: make the receive loop notice and reconnect
            if queue_if_down:
                # Delivered after the next welcome: a result is not lost to a brief disconnect.
                self._pending.append(message)

    def _reply(self, message: dict[str, Any]) -> None:
        self._send(message)

    def _flush_pending(self) -> None:
        pending = list(self._pending)
        self._pending.clear()
        for message in pending:
            self._send(message)  # re-queued if the connection drops again meanwhile

    # --- dispatch ------------------------------------------------------------------------------------
    def _handle(self, raw: str | bytes) -> bool:
        """Act on one inbound frame; returns True when it was a welcome."""
        try:
            message = protocol.parse_inbound(raw)
        except protocol.ProtocolProblem as problem:
            log.warning("refused a message: %s", problem)
            self._reply(protocol.error(str(problem), problem.request_id))
            return False
        kind = message["type"]
        if kind == "welcome":
            self.host_id = message["host_id"]
            self.connections += 1
            self.connected.set()
            log.info("connected to %s as host %s", self.ws_url, self.host_id)
            self._flush_pending()
            return True
        if kind == "ping":
            self._reply(protocol.pong(message))
        elif kind == "execute":
            self._start_execute(ExecuteCommand.build(message))  # parse_inbound checked it
        elif kind == "decide":
            decide = Decide.build(message)
            self._start_job(decide.request_id, self._run_decide, decide)
        elif kind == "abort":
            self._abort(message["request_id"])
        elif kind == "export_view":
            self._start_worker(self._run_export_view, message)
        elif kind == "export_scene":
            self._start_worker(self._run_export_scene, message)
        elif kind == "context":
            self._start_context(message["request_id"])
        elif kind == "error":
            log.warning("the server reported a problem: %s", message.get("message"))
        return False

    def _start_execute(self, command: ExecuteCommand) -> None:
        request_id = command.request_id
        held = self.executor.held_request_id
        if held is not None:
            self._reply(protocol.error(
                f"busy: automation {held} awaits a keep/discard decision; request {request_id} was not run",
                request_id))
            return
        epilogue = command.epilogue
        if epilogue is not None and content_hash(epilogue.code) != epilogue.sha256:
            self._reply(protocol.error(
                f"the epilogue's sha256 does not match its code (capability {epilogue.capability_version}); "
                f"request {request_id} was not run", request_id))
            return
        self._start_job(request_id, self._run_execute, command)

    def _start_job(self, request_id: str, target: Any, message: ExecuteCommand | Decide) -> None:
        execute = isinstance(message, ExecuteCommand)
        if not self._job_lock.acquire(blocking=False):
            self._reply(protocol.error(
                f"busy: another script is running; request {request_id} was not run (one execute at a time)",
                request_id))
            return
        if execute:
            self.executor.expect(request_id)  # before its thread starts: an abort right behind it stops it

        def run() -> None:
            try:
                reply = target(message)
            except Exception as exc:
                log.exception("request %s failed inside the host", request_id)
                reply = protocol.error(f"the host failed to run request {request_id}: {exc}", request_id)
            finally:
                if execute:
                    self.executor.forget(request_id)
                # Free the slot before answering: the cloud may send the next script the moment it reads this.
                self._job_lock.release()
            self._reply(reply)

        self._spawn(run, f"ifc-host-{message.TYPE}")

    def _abort(self, request_id: str) -> None:
        """The run behind `request_id` was cancelled: stop its script, or discard what it holds."""
        if self.executor.abort_running(request_id):
            log.info("request %s aborted: its script is stopped and rolled back", request_id)
            return  # the execute's own result (cancelled) is the answer
        if self.executor.held_request_id == request_id:
            def discard() -> None:
                with self._job_lock:
                    result = self.executor.abort_held(request_id)
                if result is None:
                    self._reply(protocol.aborted(request_id, f"nothing to abort: request {request_id} was "
                                                             "decided meanwhile"))
                else:
                    log.info("request %s aborted: its held automation is discarded", request_id)
                    self._reply(self._result_message(request_id, result))

            self._spawn(discard, "ifc-host-abort")
            return
        self._reply(protocol.aborted(request_id, f"nothing to abort: request {request_id} is not running or "
                                                 "held on this host"))

    def _start_context(self, request_id: str) -> None:
        # Cheap, but it needs the keeper: while a script runs, say so instead of waiting for it.
        if not self._job_lock.acquire(blocking=False):
            self._reply(protocol.context_failure(request_id, "busy: a script is running"))
            return

        def run() -> None:
            try:
                reply = protocol.context_result(request_id, self.executor.context())
            except Exception as exc:
                reply = protocol.context_failure(request_id, f"{type(exc).__name__}: {exc}")
            finally:
                self._job_lock.release()
            self._reply(reply)

        self._spawn(run, "ifc-host-context")

    def _start_worker(self, target: Any, message: dict[str, Any]) -> None:
        self._spawn(lambda: target(message), f"ifc-host-{message['type']}")

    def _spawn(self, run: Any, name: str) -> None:
        def guarded() -> None:
            try:
                run()
            except Exception:  # a bug here must not kill the connection; it is logged with its traceback
                log.exception("%s failed", name)
            finally:
                self._workers.discard(threading.current_thread())

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        self._workers.add(thread)
        thread.start()

    # --- work ----------------------------------------------------------------------------------------
    def _run_execute(self, job: ExecuteCommand) -> dict[str, Any]:
        log.info("running %s script for request %s", job.mode, job.request_id)
        if job.mode == "automate":  # the model as it was, for the scene's deleted and moved elements
            self.before_copies.keep(job.request_id, self.executor.committed_path)
        result = self.executor.execute(job)
        if job.mode == "automate" and not result.get("committed") and not result.get("held"):
            self.before_copies.drop(job.request_id)
        return self._result_message(job.request_id, result)

    def _run_decide(self, decide: Decide) -> dict[str, Any]:
        result = self.executor.decide(decide.request_id, decide.decision)
        if result.get("unknown"):
            return protocol.error(result["message"], decide.request_id)
        return self._result_message(decide.request_id, result)

    def _prepare_views(self) -> None:
        from ifc_host.render import prepare

        prepare(self.executor.committed_path)  # a big model is opened for its views in the background

    def _result_message(self, request_id: str, result: dict[str, Any]) -> dict[str, Any]:
        if result.get("committed"):
            self._prepare_views()
        log.info("request %s: ok=%s committed=%s held=%s (%.0f ms)", request_id, result.get("ok"),
                 result.get("committed"), bool(result.get("held")), result.get("duration_ms") or 0)
        try:
            return protocol.execute_result(request_id, result)
        except ContractError as exc:
            log.error("result for %s does not fit the contract: %s", request_id, exc)
            return protocol.error(f"the host produced an invalid result: {exc}", request_id)

    def _run_export_view(self, message: dict[str, Any]) -> None:
        request_id = message["request_id"]
        with self._view_lock:
            try:
                reply = self._render(message)
            except Exception as exc:  # every failure becomes ok: false, the host keeps serving
                log.warning("export_view %s failed: %s", request_id, exc)
                reply = protocol.export_view_failure(request_id, f"{type(exc).__name__}: {exc}")
        self._reply(reply)

    def _render(self, message: dict[str, Any]) -> dict[str, Any]:
        from ifc_host.render import RenderError, render_view

        request_id = message["request_id"]
        path = self._model_shown()
        try:
            rendered = render_view(str(path), message.get("view"), list(message.get("element_ids") or []),
                                   int(message["max_px"]), timeout_s=self.render_timeout_s,
                                   refs=[r["path"] for r in message.get("refs") or []])
        except RenderError as exc:
            return protocol.export_view_failure(request_id, str(exc))
        return protocol.export_view_result(
            request_id, png_base64=base64.b64encode(rendered.png).decode("ascii"), width=rendered.width,
            height=rendered.height, view=rendered.view, undrawn=len(rendered.undrawn),
            boxed=len(rendered.boxed), sketched=len(rendered.sketched), building=len(rendered.later),
            simplified=len(rendered.simplified))

    def _model_shown(self) -> Path:
        """The model views and scenes show: the committed one, or while an automation is held the model as it
        would be if kept (one file per hold, kept open by the render server that opened it; called under the view
        lock, so a hold's file is removed here, by the first view or scene after it ended, never under a reader)."""
        held = self.executor.held_request_id
        if held is None:
            self.held_snapshot.release()
            return self.executor.committed_path
        return self.held_snapshot.path(held, self.executor.snapshot_held)

    def _run_export_scene(self, message: dict[str, Any]) -> None:
        from ifc_host.scene_export import export_scene, failure

        request_id = message["request_id"]
        with self._view_lock:
            try:
                held = self.executor.held_request_id
                path = self._model_shown()
                if message.get("held_of") and message["held_of"] != held:
                    reply = failure(request_id, f"the change {message['held_of']} is no longer held (it was kept "
                                                "or discarded meanwhile)")
                else:
                    reply = export_scene(message, path, self.before_copies, self.render_timeout_s * 1.5)
            except Exception as exc:  # every failure becomes ok: false, the host keeps serving
                log.warning("export_scene %s failed: %s", request_id, exc)
                reply = failure(request_id, f"{type(exc).__name__}: {exc}")
        self._reply(reply)

    def wait_idle(self, timeout: float = 10.0) -> None:
        for thread in list(self._workers):
            thread.join(timeout)

    def shut_down(self) -> None:
        """Stop serving for good: a script still running is killed (nobody will read its result), the
        workers end, and the keeper closes (discarding anything held)."""
        aborted = self.executor.abort_in_flight()
        if aborted is not None:
            log.info("stopping: request %s was still running and is aborted", aborted)
        self.wait_idle()
        self.executor.close()
        self.before_copies.close()
        self.held_snapshot.close()


def websocket_json(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


class HostHandle:
    """A host runtime serving on a background thread (for `nexus run` / `nexus demo`)."""

    def __init__(self, runtime: HostRuntime, stop: threading.Event) -> None:
        self.runtime = runtime
        self._stop = stop
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="ifc-host", daemon=True)

    @property
    def connected(self) -> threading.Event:
        return self.runtime.connected

    @property
    def host_id(self) -> str | None:
        return self.runtime.host_id

    def wait_connected(self, timeout: float = 30.0) -> str:
        """Block until welcomed; returns the host id. Raises the runtime's error if it gave up."""
        deadline = time.monotonic() + timeout
        while not self.connected.wait(0.05):
            if self.finished.is_set():
                raise self.error or RuntimeError("the IFC host stopped before it connected")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the IFC host did not connect to {self.runtime.ws_url} within {timeout:g} s")
        return self.runtime.host_id or ""

    def _serve(self) -> None:
        try:
            self.runtime.serve(self._stop)
        except BaseException as exc:  # kept for the owner to inspect via .error
            self.error = exc
            log.error("IFC host stopped: %s", exc)
        finally:
            self._stop.set()  # ends the runtime's stop watcher too
            self.runtime.shut_down()
            self.finished.set()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self.thread.join(timeout)


def _build_runtime(model_path: str, server_url: str, token: str, out_path: str | None,
                   hold_timeout_s: float, reconnect: ReconnectPolicy | None,
                   isolation: str | None = None, keeper: LaunchedKeeper | None = None) -> HostRuntime:
    from ifc_host.render import prepare

    prepare(model_path)  # a big model's render server opens it while the keeper does (serve() finds it under way)
    executor = IsolatedExecutor(model_path, out_path, hold_timeout_s=hold_timeout_s, isolation=isolation,
                                launched=keeper)
    for warning in executor.document.get("warnings") or []:
        log.warning("%s: %s", Path(model_path).name, warning)
    try:
        return HostRuntime(executor, server_url, token, reconnect=reconnect)
    except Exception:
        executor.close()
        raise


def run_host(model_path: str, server_url: str, token: str, stop: threading.Event | None = None,
             out_path: str | None = None, *, hold_timeout_s: float = DEFAULT_HOLD_TIMEOUT_S,
             reconnect: ReconnectPolicy | None = None, isolation: str | None = None,
             keeper: LaunchedKeeper | None = None) -> None:
    """Serve `model_path` to the orchestrator at `server_url` until `stop` is set (blocking). `keeper`: the
    model keeper already started on these paths (keeper_process.start_early).

    Raises BadModelError at once for an unusable file, HostRejected if the server refuses or revokes the token,
    HostReplaced if another connection takes this host id over.
    Commits go to `out_path` when given (the input file is then never modified), else back to `model_path`.
    """
    stop = stop or threading.Event()
    runtime = _build_runtime(model_path, server_url, token, out_path, hold_timeout_s, reconnect, isolation, keeper)
    try:
        runtime.serve(stop)
    except KeyboardInterrupt:
        stop.set()
    finally:
        stop.set()
        runtime.shut_down()


def start_host_thread(model_path: str, server_url: str, token: str, stop: threading.Event | None = None,
                      out_path: str | None = None, *, hold_timeout_s: float = DEFAULT_HOLD_TIMEOUT_S,
                      reconnect: ReconnectPolicy | None = None, isolation: str | None = None) -> HostHandle:
    """Like run_host, on a background thread (tests, embedding). The model is opened (and checked) before this
    returns. Commands that also run an orchestrator use launcher.start_host_process instead, so the host and
    its scripts never share the orchestrator's process."""
    runtime = _build_runtime(model_path, server_url, token, out_path, hold_timeout_s, reconnect, isolation)
    handle = HostHandle(runtime, stop or threading.Event())
    handle.thread.start()
    return handle
