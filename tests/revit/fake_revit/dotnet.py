"""Fake .NET surface the runtime touches: clr, System (generics, AppDomain, Process, Uri, Text, IO,
Threading, Tasks), System.Net.WebSockets.ClientWebSocket, a little WPF, and WebView2.

ClientWebSocket is backed by a real websocket (websocket-client), and ReceiveAsync hands a message
over in buffer-sized fragments with EndOfMessage only on the last one, like .NET does, so the
runtime's ClientWebSocket transport is exercised for real against a real server.
"""
from __future__ import annotations

import threading
from typing import Any

import websocket

from .common import EnumValue, NetList, Session, make_enum

# --- clr ---------------------------------------------------------------------------------------


class ClrModule:
    """IronPython's clr: AddReference fails for assemblies the fake session says are absent."""

    def __init__(self) -> None:
        self.references: list[str] = []

    def AddReference(self, name: str) -> None:
        if name in Session.world.missing_assemblies:
            raise OSError("Could not add reference to assembly " + name)
        self.references.append(name)

    def AddReferenceByPartialName(self, name: str) -> None:
        self.AddReference(name)


# --- System basics ---------------------------------------------------------------------------


class _Generic:
    """`List[T]`, `EventHandler[T]`, `ArraySegment[Byte]`...: indexing returns the same factory."""

    def __init__(self, factory: Any) -> None:
        self._factory = factory

    def __getitem__(self, _type_args: Any) -> Any:
        return self._factory

    def __call__(self, *args: Any) -> Any:
        return self._factory(*args)


class Delegate:
    def __init__(self, function: Any) -> None:
        self._function = function

    def __call__(self, *args: Any) -> Any:
        return self._function(*args)

    def Invoke(self, *args: Any) -> Any:
        return self._function(*args)


EventHandler = _Generic(Delegate)
Action = _Generic(Delegate)
Func = _Generic(Delegate)
List = _Generic(lambda items=(): NetList(items))


def Byte(value: int = 0) -> int:
    return int(value)


def Int64(value: int = 0) -> int:
    return int(value)


class Guid:
    def __init__(self, text: str) -> None:
        self._text = str(text).lower()

    @staticmethod
    def Parse(text: str) -> Guid:
        return Guid(text)

    def ToString(self) -> str:
        return self._text

    def __str__(self) -> str:
        return self._text


class Uri:
    def __init__(self, text: str) -> None:
        self.OriginalString = text
        self.AbsoluteUri = text

    def ToString(self) -> str:
        return self.OriginalString

    def __str__(self) -> str:  # IronPython's str() of a .NET object is its ToString()
        return self.OriginalString


class TimeSpan:
    def __init__(self, seconds: float) -> None:
        self.TotalSeconds = float(seconds)
        self.TotalMilliseconds = float(seconds) * 1000.0

    @staticmethod
    def FromSeconds(seconds: float) -> TimeSpan:
        return TimeSpan(seconds)

    @staticmethod
    def FromMilliseconds(milliseconds: float) -> TimeSpan:
        return TimeSpan(milliseconds / 1000.0)


class Array:
    @staticmethod
    def CreateInstance(_element_type: Any, length: int) -> bytearray:
        return bytearray(length)


class ArraySegmentOfByte:
    def __init__(self, array: Any, offset: int = 0, count: int | None = None) -> None:
        self.Array = array
        self.Offset = offset
        self.Count = len(array) - offset if count is None else count


ArraySegment = _Generic(ArraySegmentOfByte)


class _AppDomainData:
    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def GetData(self, name: str) -> Any:
        return self._data.get(name)

    def SetData(self, name: str, value: Any) -> None:
        self._data[name] = value


class AppDomain:
    CurrentDomain = _AppDomainData()


class Win32Exception(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.Message = message


class ProcessStartInfo:
    def __init__(self, file_name: str = "") -> None:
        self.FileName = file_name
        # .NET Framework (Revit 2024 and earlier) defaults to True, .NET 8 (Revit 2025+) to False.
        self.UseShellExecute = Session.version < 2025


class Process:
    @staticmethod
    def Start(target: Any) -> None:
        """A URL opens in the default browser only through the shell: on .NET 8 a bare URL (or a
        ProcessStartInfo without UseShellExecute) is taken for an executable and throws."""
        info = target if isinstance(target, ProcessStartInfo) else ProcessStartInfo(str(target))
        if not info.UseShellExecute and "://" in info.FileName:
            raise Win32Exception(f"An error occurred trying to start process '{info.FileName}' with working "
                                 "directory. The system cannot find the file specified.")
        Session.world.opened_urls.append(info.FileName)


class IntPtr:
    def __init__(self, value: int) -> None:
        self._value = int(value)

    def ToInt64(self) -> int:
        return self._value


# --- System.Net: the system proxy ---------------------------------------------------------------


class NetworkCredential:
    """CredentialCache.DefaultCredentials: the signed-in Windows user's credentials."""


class CredentialCache:
    DefaultCredentials = NetworkCredential()


class WebProxy:
    """The system proxy: every address bypasses it, unless the fake network requires it."""

    ADDRESS = "http://proxy.corp.example:8080/"

    def __init__(self) -> None:
        self.Credentials: Any = None

    def IsBypassed(self, uri: Uri) -> bool:
        return not Session.world.proxy_required

    def GetProxy(self, uri: Uri) -> Uri:
        return Uri(self.ADDRESS) if Session.world.proxy_required else uri


class WebRequest:
    @staticmethod
    def GetSystemWebProxy() -> WebProxy:
        return WebProxy()


class Encoding:
    class UTF8:
        @staticmethod
        def GetBytes(text: str) -> bytearray:
            return bytearray(text.encode("utf-8"))

        @staticmethod
        def GetString(data: Any, index: int = 0, count: int | None = None) -> str:
            data = bytes(data)
            end = len(data) if count is None else index + count
            return data[index:end].decode("utf-8")


class MemoryStream:
    def __init__(self) -> None:
        self._data = bytearray()

    @property
    def Length(self) -> int:
        return len(self._data)

    def Write(self, buffer: Any, offset: int, count: int) -> None:
        self._data.extend(bytes(buffer[offset:offset + count]))

    def ToArray(self) -> bytearray:
        return bytearray(self._data)

    def Dispose(self) -> None:
        self._data = bytearray()


# --- tasks and cancellation ----------------------------------------------------------------------


class AggregateException(Exception):
    def __init__(self, inner: BaseException) -> None:
        super().__init__("One or more errors occurred. (" + str(inner) + ")")
        self.InnerException = inner
        self.Message = str(self)


class PendingTask:
    """A task that has not finished (a send into a stalled network): Wait(timeout) gives up and returns
    False; Wait() blocks until the task ends, which here only an Abort of its socket does (it then faults)."""

    def __init__(self) -> None:
        self._ended = threading.Event()
        self._error: BaseException | None = None

    def fault(self, error: BaseException) -> None:
        self._error = error
        self._ended.set()

    @property
    def IsFaulted(self) -> bool:
        return self._error is not None

    def Wait(self, timeout: Any = None) -> bool:
        seconds = None if timeout is None else (timeout.TotalSeconds if isinstance(timeout, TimeSpan)
                                                else timeout / 1000.0)
        if not self._ended.wait(seconds):
            return False
        if self._error is not None:
            raise AggregateException(self._error)
        return True


class Task:
    """A task that ran when it was created (enough for .Wait(), .Result and ContinueWith)."""

    def __init__(self, function: Any = None, *args: Any) -> None:
        self._result: Any = None
        self._error: BaseException | None = None
        if function is not None:
            try:
                self._result = function(*args)
            except BaseException as error:  # noqa: BLE001 - stored like a faulted .NET task
                self._error = error

    @staticmethod
    def FromResult(value: Any) -> Task:
        return Task(lambda: value)

    @property
    def IsFaulted(self) -> bool:
        return self._error is not None

    @property
    def Exception(self) -> Any:
        return AggregateException(self._error) if self._error else None

    def Wait(self, timeout: Any = None) -> bool:
        if self._error is not None:
            raise AggregateException(self._error)
        return True

    @property
    def Result(self) -> Any:
        self.Wait()
        return self._result

    def ContinueWith(self, continuation: Any, _scheduler: Any = None) -> Task:
        return Task(continuation, self)


class TaskScheduler:
    @staticmethod
    def FromCurrentSynchronizationContext() -> TaskScheduler:
        """Like .NET: only where the UI thread has a synchronization context, i.e. inside dispatcher
        work (Loaded, BeginInvoke, timer ticks, a modal loop); not during Revit's OnStartup."""
        world = Session.world
        if threading.current_thread() is not Session.main_thread or not world.has_synchronization_context():
            raise Session.world.exceptions.InvalidOperationException(
                "The current SynchronizationContext may not be used as a TaskScheduler.")
        return TaskScheduler()


class CancellationToken:
    def __init__(self, source: CancellationTokenSource | None = None) -> None:
        self._source = source

    @property
    def IsCancellationRequested(self) -> bool:
        return bool(self._source and self._source._cancelled)


class CancellationTokenSource:
    def __init__(self) -> None:
        self._cancelled = False
        self._callbacks: list[Any] = []

    @property
    def Token(self) -> CancellationToken:
        return CancellationToken(self)

    def Cancel(self) -> None:
        self._cancelled = True
        for callback in self._callbacks:
            callback()

    def Dispose(self) -> None:
        pass


# --- System.Net.WebSockets -------------------------------------------------------------------------

WebSocketMessageType = make_enum("WebSocketMessageType", {"Text": 0, "Binary": 1, "Close": 2})
WebSocketState = make_enum("WebSocketState", {"None": 0, "Connecting": 1, "Open": 2, "CloseSent": 3,
                                              "CloseReceived": 4, "Closed": 5, "Aborted": 6})
WebSocketCloseStatus = make_enum("WebSocketCloseStatus", {"NormalClosure": 1000, "EndpointUnavailable": 1001})


class WebSocketException(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.Message = message


class ClientWebSocketOptions:
    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.KeepAliveInterval = TimeSpan(30)
        self.Proxy: Any = None

    def SetRequestHeader(self, name: str, value: str) -> None:
        self.headers[name] = value


class WebSocketReceiveResult:
    def __init__(self, count: int, message_type: Any, end_of_message: bool, close_status: Any = None) -> None:
        self.Count = count
        self.MessageType = message_type
        self.EndOfMessage = end_of_message
        self.CloseStatus = close_status
        self.CloseStatusDescription = None


class ClientWebSocket:
    def __init__(self) -> None:
        self.Options = ClientWebSocketOptions()
        self.State = WebSocketState.__dict__["None"]
        self._socket: websocket.WebSocket | None = None
        self._pending = b""
        self._pending_type: Any = None
        self._send_busy = threading.Lock()
        self._receive_busy = threading.Lock()
        self._pending_sends: list[PendingTask] = []
        self._aborted = threading.Event()
        self._close_status: Any = None  # like .NET: the close frame's status (a code outside the enum as is)

    def ConnectAsync(self, uri: Uri, token: CancellationToken) -> Task:
        def connect() -> None:
            self.State = WebSocketState.Connecting
            proxy = self.Options.Proxy
            if Session.world.proxy_required and (proxy is None or proxy.Credentials is not
                                                 CredentialCache.DefaultCredentials):
                self.State = WebSocketState.Closed
                raise WebSocketException("Unable to connect to the remote server: the corporate proxy answered "
                                         "407 Proxy Authentication Required")
            try:
                header = [name + ": " + value for name, value in self.Options.headers.items()]
                self._socket = websocket.create_connection(uri.OriginalString, header=header, timeout=10)
                self._socket.settimeout(None)
            except Exception as error:
                self.State = WebSocketState.Closed
                raise WebSocketException("Unable to connect to the remote server: " + str(error)) from error
            self.State = WebSocketState.Open
        return Task(connect)

    def SendAsync(self, segment: ArraySegmentOfByte, message_type: Any, end_of_message: bool,
                  token: CancellationToken) -> Any:
        network = Session.world.network
        if network == "stalled":  # the send never completes; only Abort ends it
            pending = PendingTask()
            self._pending_sends.append(pending)
            return pending
        if network == "black hole":  # a half-open link: the send "succeeds" and goes nowhere
            return Task(lambda: None)

        def send() -> None:
            # .NET allows one outstanding send at a time; a second concurrent one throws.
            if not self._send_busy.acquire(blocking=False):
                raise Session.world.exceptions.InvalidOperationException(
                    "There is already one outstanding 'SendAsync' call for this WebSocket instance.")
            try:
                if self.State != WebSocketState.Open or self._socket is None:
                    raise WebSocketException("The WebSocket is not connected.")
                data = bytes(segment.Array[segment.Offset:segment.Offset + segment.Count])
                if not end_of_message:
                    raise WebSocketException("this fake only sends whole messages")
                if message_type == WebSocketMessageType.Text:
                    self._socket.send(data.decode("utf-8"))
                else:
                    self._socket.send_binary(data)
            except websocket.WebSocketException as error:
                self.State = WebSocketState.Aborted
                raise WebSocketException(str(error)) from error
            finally:
                self._send_busy.release()
        return Task(send)

    def ReceiveAsync(self, segment: ArraySegmentOfByte, token: CancellationToken) -> Task:
        def receive() -> WebSocketReceiveResult:
            if not self._receive_busy.acquire(blocking=False):
                raise Session.world.exceptions.InvalidOperationException(
                    "There is already one outstanding 'ReceiveAsync' call for this WebSocket instance.")
            try:
                if not self._pending:
                    self._fill()
                if self._pending_type == WebSocketMessageType.Close:
                    self.State = WebSocketState.CloseReceived
                    return WebSocketReceiveResult(0, WebSocketMessageType.Close, True, self._close_status)
                chunk, self._pending = self._pending[:segment.Count], self._pending[segment.Count:]
                segment.Array[segment.Offset:segment.Offset + len(chunk)] = chunk
                return WebSocketReceiveResult(len(chunk), self._pending_type, not self._pending)
            finally:
                self._receive_busy.release()
        return Task(receive)

    def _fill(self) -> None:
        if self._socket is None:
            raise WebSocketException("The WebSocket is not connected.")
        while Session.world.network == "black hole":  # nothing arrives on a half-open link
            if self._aborted.wait(0.05):
                raise WebSocketException("The WebSocket was aborted.")
        try:
            opcode, data = self._socket.recv_data()
        except (websocket.WebSocketException, OSError) as error:
            if self.State == WebSocketState.Aborted:
                raise WebSocketException("The WebSocket was aborted.") from error
            self._pending_type, self._pending = WebSocketMessageType.Close, b""
            return
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            self._pending_type, self._pending = WebSocketMessageType.Close, b""
            if len(data) >= 2:
                code = int.from_bytes(data[:2], "big")
                known = {int(v): v for v in vars(WebSocketCloseStatus).values() if isinstance(v, EnumValue)}
                self._close_status = known.get(code, EnumValue("WebSocketCloseStatus", str(code), code))
            return
        self._pending_type = WebSocketMessageType.Text if opcode == websocket.ABNF.OPCODE_TEXT else \
            WebSocketMessageType.Binary
        self._pending = data if isinstance(data, bytes) else data.encode("utf-8")

    def CloseOutputAsync(self, status: Any, description: str, token: CancellationToken) -> Task:
        def close() -> None:
            if self._socket is not None and self.State == WebSocketState.Open:
                self._socket.send_close()
                self.State = WebSocketState.CloseSent
        return Task(close)

    def Abort(self) -> None:
        """Like .NET: the connection is torn down at once and a pending ReceiveAsync fails."""
        self.State = WebSocketState.Aborted
        self._aborted.set()
        for pending in self._pending_sends:
            pending.fault(WebSocketException("The WebSocket was aborted."))
        if self._socket is not None:
            self._socket.abort()  # wakes a thread blocked in recv
            self._socket.shutdown()  # closes the TCP connection

    def Dispose(self) -> None:
        if self._socket is not None and self.State != WebSocketState.Aborted:
            try:
                self._socket.close(timeout=0.2)
            except (websocket.WebSocketException, OSError):
                pass  # .NET's Dispose does not throw either
            self.State = WebSocketState.Closed


# --- WPF -----------------------------------------------------------------------------------------

Visibility = make_enum("Visibility", {"Visible": 0, "Hidden": 1, "Collapsed": 2})


class FakeControl:
    """Any named XAML element: properties are plain attributes, events are slots."""

    def __init__(self, tag: str, attributes: dict[str, str]) -> None:
        from .events import EventSlot
        self.tag = tag
        self.attributes = attributes
        self.Text = attributes.get("Text", "")
        self.Content = attributes.get("Content", "")
        self.IsEnabled = True
        self.Visibility = Visibility.Visible
        self.Children = NetList()
        self.Click = EventSlot("Click")
        self.ToolTip = attributes.get("ToolTip", "")

    def __setattr__(self, name: str, value: Any) -> None:
        # WPF objects belong to the UI thread: "The calling thread cannot access this object..."
        if name[0].isupper() and Session.main_thread is not None \
                and threading.current_thread() is not Session.main_thread:
            Session.violations.append(f"WPF {self.tag}.{name} set on thread {threading.current_thread().name}")
            raise Session.world.exceptions.InvalidOperationException(
                "The calling thread cannot access this object because a different thread owns it.")
        object.__setattr__(self, name, value)

    def click(self) -> None:
        self.Click.fire(self, None)


class DispatcherTimer:
    def __init__(self) -> None:
        from .events import EventSlot
        self.Interval = TimeSpan(1)
        self.Tick = EventSlot("Tick")
        self.IsEnabled = False
        self._due = 0.0
        Session.world.timers.append(self)

    def Start(self) -> None:
        import time
        self.IsEnabled = True
        self._due = time.monotonic() + self.Interval.TotalSeconds  # ticks come from a modal loop

    def Stop(self) -> None:
        self.IsEnabled = False


class DispatcherFrame:
    def __init__(self) -> None:
        self.Continue = True


class Dispatcher:
    """The UI thread's dispatcher: BeginInvoke posts work to the fake main thread (run later, with a
    synchronization context); PushFrame runs a nested message loop until the frame's Continue is False."""

    @staticmethod
    def BeginInvoke(callback: Any, *args: Any) -> None:
        Session.world.post_ui(callback, *args)

    @staticmethod
    def PushFrame(frame: DispatcherFrame) -> None:
        Session.world.run_frame(frame)


# --- WebView2 ------------------------------------------------------------------------------------


class CoreWebView2EnvironmentOptions:
    def __init__(self) -> None:
        self.AdditionalBrowserArguments = ""


class CoreWebView2Environment:
    def __init__(self, user_data_folder: str, options: CoreWebView2EnvironmentOptions) -> None:
        self.UserDataFolder = user_data_folder
        self.Options = options
        self.BrowserVersionString = Session.world.webview2_runtime_version

    @staticmethod
    def GetAvailableBrowserVersionString() -> str:
        version = Session.world.webview2_runtime_version
        if version is None:
            raise OSError("Couldn't find a compatible Webview2 Runtime installation to host WebViews.")
        return version

    @staticmethod
    def CreateAsync(browser_folder: Any, user_data_folder: str, options: CoreWebView2EnvironmentOptions) -> Task:
        world = Session.world
        if world.webview2_start_failures > 0:  # e.g. the user-data folder is locked by another process
            world.webview2_start_failures -= 1
            raise OSError("The requested resource is in use. (0x800700AA)")
        return Task(lambda: CoreWebView2Environment(user_data_folder, options))


class WebView2:
    def __init__(self) -> None:
        self.environment: CoreWebView2Environment | None = None
        self.implicitly_initialised = False
        self._source: Uri | None = None
        Session.world.webviews.append(self)

    def EnsureCoreWebView2Async(self, environment: CoreWebView2Environment) -> Task:
        def ensure() -> None:
            self.environment = environment
        return Task(ensure)

    @property
    def Source(self) -> Uri | None:
        return self._source

    @Source.setter
    def Source(self, uri: Uri) -> None:
        if self.environment is None:
            # Real WebView2 then initialises itself with a default environment: without our arguments.
            self.implicitly_initialised = True
        self._source = uri

    def Dispose(self) -> None:
        pass
