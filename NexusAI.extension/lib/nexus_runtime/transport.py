"""The small websocket interface the connection needs; implemented by ClientWebSocket inside Revit.

A transport object serves one connection attempt:
    transport.connect(url, headers, timeout_s)  # headers: dict, e.g. {"Authorization": "Bearer ..."}
    transport.send_text(text)                    # callers serialise sends (one sender at a time)
    transport.receive_text()                     # blocks for one whole text message; raises TransportClosed
                                                 # (with the close code the server sent, if any)
    transport.close()                            # idempotent; unblocks a pending receive_text()
A single receiving thread and a single sending thread may use it concurrently.
"""


class TransportError(IOError):
    """The connection could not be made or broke; the connection thread reconnects with backoff."""


class TransportClosed(TransportError):
    """The peer closed the websocket; `code` is the close frame's status code (None when there was none)."""

    def __init__(self, message, code=None):
        TransportError.__init__(self, message)
        self.code = code
