"""Fake Autodesk.Revit.DB.Events / UI.Events, and the event slots Revit objects expose.

In IronPython `app.DocumentChanged += handler` calls add_DocumentChanged; here an EventSlot supports
the same `+=` / `-=` spelling. Handlers are called as handler(sender, args) on Revit's main thread.
"""
from __future__ import annotations

from typing import Any

from .common import NetList, make_enum

UndoOperation = make_enum("UndoOperation", {
    "TransactionCommitted": 0, "TransactionRolledBack": 1, "TransactionGroupRolledBack": 2,
    "TransactionUndone": 3, "TransactionRedone": 4})


class EventSlot:
    def __init__(self, name: str) -> None:
        self.name = name
        self.handlers: list[Any] = []

    def __iadd__(self, handler: Any) -> EventSlot:
        self.handlers.append(handler)
        return self

    def __isub__(self, handler: Any) -> EventSlot:
        if handler in self.handlers:
            self.handlers.remove(handler)
        return self

    def fire(self, sender: Any, args: Any) -> None:
        for handler in list(self.handlers):
            handler(sender, args)


def event_property(name: str) -> property:
    """A C# event as IronPython shows it: readable, and `+=`/`-=` assign the same slot back."""
    attribute = "_event_" + name

    def getter(self: Any) -> EventSlot:
        if not hasattr(self, attribute):
            setattr(self, attribute, EventSlot(name))
        return getattr(self, attribute)

    def setter(self: Any, value: Any) -> None:
        if value is not getter(self):
            raise AttributeError("cannot assign to event " + name + "; use += or -=")

    return property(getter, setter)


class DocumentChangedEventArgs:
    def __init__(self, document: Any, transaction_names: list[str], added: list[Any], modified: list[Any],
                 deleted: list[Any]) -> None:
        self._document = document
        self._names = list(transaction_names)
        self._added, self._modified, self._deleted = added, modified, deleted
        self.Operation = UndoOperation.TransactionCommitted

    def GetDocument(self) -> Any:
        return self._document

    def GetTransactionNames(self) -> NetList:
        return NetList(self._names)

    def GetAddedElementIds(self) -> NetList:
        return NetList(self._added)

    def GetModifiedElementIds(self) -> NetList:
        return NetList(self._modified)

    def GetDeletedElementIds(self) -> NetList:
        return NetList(self._deleted)


class ViewActivatedEventArgs:
    def __init__(self, document: Any, previous: Any, current: Any) -> None:
        self.Document = document
        self.PreviousActiveView = previous
        self.CurrentActiveView = current
