"""Send messages from Revit's main thread without waiting on the network there: one background thread
drains a queue into the connection's send(). Plain Python."""
import threading
from collections import deque


class BackgroundSender(object):
    def __init__(self, send, log):
        self._send = send
        self._log = log
        self._queue = deque()
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="NexusAI sender")
        self._thread.daemon = True
        self._thread.start()

    def send(self, message):
        with self._wake:
            self._queue.append(message)
            self._wake.notify()

    def stop(self, timeout_s=1.0):
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout_s)

    def _run(self):
        while True:
            with self._wake:
                while not self._queue and not self._stopped:
                    self._wake.wait(1.0)
                if not self._queue:
                    return
                message = self._queue.popleft()
            try:
                self._send(message)  # the connection keeps results for later if the link is down
            except Exception as exc:
                self._log.write("background send failed: {0}".format(exc))
