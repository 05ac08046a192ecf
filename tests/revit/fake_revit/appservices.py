"""Fake Autodesk.Revit.ApplicationServices: the Application with its version, open documents and events."""
from __future__ import annotations

from typing import Any

from .common import Session
from .events import event_property


class Application:
    DocumentChanged = event_property("DocumentChanged")
    DocumentOpened = event_property("DocumentOpened")
    DocumentClosed = event_property("DocumentClosed")
    DocumentSaving = event_property("DocumentSaving")
    DocumentSavingAs = event_property("DocumentSavingAs")
    DocumentClosing = event_property("DocumentClosing")
    DocumentSynchronizingWithCentral = event_property("DocumentSynchronizingWithCentral")
    FileExporting = event_property("FileExporting")

    def __init__(self, version: int) -> None:
        self.VersionNumber = str(version)
        self.VersionName = "Autodesk Revit " + str(version)
        self.VersionBuild = str(version - 2000) + ".0.0.0"
        self.SubVersionNumber = str(version) + ".0"
        self.Username = "fake-user"

    @property
    def Documents(self) -> Any:
        """Every open document (the active one, others open in the background)."""
        from .db import DocumentSet
        Session.check_api_context("Application.Documents")
        return DocumentSet(Session.world.documents)
