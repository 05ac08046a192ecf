"""The websocket transport inside Revit: System.Net.WebSockets.ClientWebSocket. Revit-facing (.NET).

Implements the interface in transport.py. ReceiveAsync may hand a message over in several fragments:
they are collected in a MemoryStream until EndOfMessage, then decoded as UTF-8 once (a fragment can end
in the middle of a multi-byte character). The connection goes through the system proxy with the
signed-in user's credentials (corporate networks). A send that does not finish within `send_timeout_s`
(a stalled network) aborts the socket, so no thread waits on it for ever.
"""
import clr

try:
    clr.AddReference("System.Net.WebSockets.Client")  # .NET 8 (Revit 2025+); part of System on .NET Framework
except Exception:
    clr.AddReference("System")

from System import Array, ArraySegment, Byte, TimeSpan, Uri  # noqa: E402
from System.IO import MemoryStream  # noqa: E402
from System.Net import CredentialCache, WebRequest  # noqa: E402
from System.Net.WebSockets import ClientWebSocket, WebSocketCloseStatus, WebSocketMessageType  # noqa: E402
from System.Text import Encoding  # noqa: E402
from System.Threading import CancellationTokenSource  # noqa: E402

from nexus_runtime.transport import TransportClosed, TransportError  # noqa: E402

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ClientWebSocketTransport(object):
    def __init__(self, buffer_size=16384, keepalive_s=20, send_timeout_s=15.0):
        self._buffer = Array.CreateInstance(Byte, buffer_size)
        self._keepalive_s = keepalive_s
        self._send_timeout_s = send_timeout_s
        self._socket = None
        self._cancel = None

    def connect(self, url, headers, timeout_s):
        self._cancel = CancellationTokenSource()
        socket = ClientWebSocket()
        for name, value in headers.items():
            socket.Options.SetRequestHeader(name, value)
        socket.Options.KeepAliveInterval = TimeSpan.FromSeconds(self._keepalive_s)
        socket.Options.Proxy = system_proxy()
        self._socket = socket
        try:
            finished = socket.ConnectAsync(Uri(url), self._cancel.Token).Wait(TimeSpan.FromSeconds(timeout_s))
        except Exception as exc:
            raise TransportError("could not connect to {0}: {1}".format(url, _reason(exc)))
        if not finished:
            socket.Abort()
            raise TransportError("could not connect to {0}: timed out".format(url))

    def send_text(self, text):
        data = Encoding.UTF8.GetBytes(text)
        socket = self._socket
        if socket is None:
            raise TransportError("send failed: the connection is closed")
        try:
            finished = socket.SendAsync(ArraySegment[Byte](data), WebSocketMessageType.Text, True,
                                        self._cancel.Token).Wait(TimeSpan.FromSeconds(self._send_timeout_s))
        except Exception as exc:
            raise TransportError("send failed: " + _reason(exc))
        if not finished:
            socket.Abort()  # the pending send then fails; the connection thread reconnects
            raise TransportError("send failed: no progress for {0:g} s".format(self._send_timeout_s))

    def receive_text(self):
        stream = MemoryStream()
        try:
            while True:
                try:
                    result = self._socket.ReceiveAsync(ArraySegment[Byte](self._buffer), self._cancel.Token).Result
                except Exception as exc:
                    raise TransportError("receive failed: " + _reason(exc))
                if result.MessageType == WebSocketMessageType.Close:
                    raise TransportClosed("the server closed the connection", _close_code(result))
                stream.Write(self._buffer, 0, result.Count)
                if stream.Length > MAX_MESSAGE_BYTES:
                    raise TransportError("message larger than {0} bytes".format(MAX_MESSAGE_BYTES))
                if result.EndOfMessage:
                    return Encoding.UTF8.GetString(stream.ToArray())
        finally:
            stream.Dispose()

    def close(self):
        socket, self._socket = self._socket, None
        if socket is None:
            return
        try:
            socket.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "closing", self._cancel.Token).Wait(
                TimeSpan.FromSeconds(1))
        except Exception:
            pass  # the link may already be gone; Abort below releases it either way
        socket.Abort()
        socket.Dispose()
        if self._cancel is not None:
            self._cancel.Cancel()


def system_proxy():
    """The proxy Windows is configured with, authenticating as the signed-in user (None when unavailable:
    the connection then goes direct)."""
    try:
        proxy = WebRequest.GetSystemWebProxy()
        proxy.Credentials = CredentialCache.DefaultCredentials
        return proxy
    except Exception:
        return None


def _close_code(result):
    """The close frame's status code as a number (4401, 4409...), None when the server sent none."""
    try:
        status = result.CloseStatus  # Nullable<WebSocketCloseStatus>: IronPython gives the value or None
        return None if status is None else int(status)
    except Exception:
        return None


def _reason(exc):
    inner = getattr(exc, "InnerException", None)
    return str(getattr(inner or exc, "Message", None) or inner or exc)
