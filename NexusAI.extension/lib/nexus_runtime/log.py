"""A thread-safe log: background threads must never print (pyRevit's output window is WPF)."""
import io
import threading
import time
from collections import deque


class RuntimeLog(object):
    def __init__(self, path=None, keep=200):
        self._lines = deque(maxlen=keep)
        self._lock = threading.Lock()
        self._path = path

    def write(self, text):
        line = time.strftime("%Y-%m-%d %H:%M:%S") + "  " + text
        with self._lock:
            self._lines.append(line)
            if self._path:
                try:
                    with io.open(self._path, "a", encoding="utf-8") as handle:
                        handle.write(u"" + line + u"\n")
                except (IOError, OSError):
                    self._path = None  # a log that cannot be written must not break the runtime

    def recent(self, count=20):
        with self._lock:
            return list(self._lines)[-count:]
