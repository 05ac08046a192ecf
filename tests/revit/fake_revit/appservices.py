"""Fake Autodesk.Revit.ApplicationServices: the Application with its version and DocumentChanged."""
from __future__ import annotations

from .events import event_property


class Application:
    DocumentChanged = event_property("DocumentChanged")
    DocumentOpened = event_property("DocumentOpened")
    DocumentClosed = event_property("DocumentClosed")

    def __init__(self, version: int) -> None:
        self.VersionNumber = str(version)
        self.VersionName = "Autodesk Revit " + str(version)
        self.VersionBuild = str(version - 2000) + ".0.0.0"
        self.SubVersionNumber = str(version) + ".0"
        self.Username = "fake-user"
