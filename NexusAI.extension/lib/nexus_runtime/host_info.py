"""What the hello message says about this Revit, captured on the main thread for the socket thread.

The connection thread may not read the Revit API, so the main thread keeps this snapshot current
(at startup and when the active document changes) and the connection thread only reads it.
"""
import sys
import threading


class HostInfo(object):
    def __init__(self, host_version="unknown", document_title=None, python_version=None):
        self._lock = threading.Lock()
        self._host_version = host_version
        self._document_title = document_title
        self._python_version = python_version or sys.version.replace("\n", " ")

    def update(self, host_version=None, document_title=None):
        with self._lock:
            if host_version:
                self._host_version = host_version
            self._document_title = document_title

    def snapshot(self):
        with self._lock:
            return {"host_version": self._host_version, "document_title": self._document_title,
                    "python_version": self._python_version}
