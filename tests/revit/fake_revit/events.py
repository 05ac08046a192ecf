"""Fake Autodesk.Revit.DB.Events / UI.Events, and the event slots Revit objects expose.

In IronPython `app.DocumentChanged += handler` calls add_DocumentChanged; here an EventSlot supports
the same `+=` / `-=` spelling. Handlers are called as handler(sender, args) on Revit's main thread.

Pre-events (DocumentSaving, DocumentClosing, FileExporting...) carry `Cancellable` and `Cancel()`;
Revit asks every handler, then refuses the operation if one of them cancelled it. Cancel() on an event
that is not cancellable throws. DialogBoxShowing is not cancelled but answered: `OverrideResult(code)`
dismisses the dialog as if that button had been pressed, and returns False for a code the dialog has
no button for.
"""
from __future__ import annotations

from typing import Any

from .common import NetList, make_enum
from .exceptions import InvalidOperationException

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


# --- cancellable pre-events -------------------------------------------------------------------------

class RevitAPIEventArgs:
    def __init__(self, cancellable: bool = False) -> None:
        self._cancellable = cancellable
        self._cancelled = False

    @property
    def Cancellable(self) -> bool:
        return self._cancellable

    @property
    def IsValidObject(self) -> bool:
        return True

    def IsCancelled(self) -> bool:
        return self._cancelled

    def Dispose(self) -> None:
        pass


class RevitAPIPreEventArgs(RevitAPIEventArgs):
    def Cancel(self) -> None:
        if not self._cancellable:
            raise InvalidOperationException("This event cannot be cancelled.")
        self._cancelled = True


class RevitAPIPreDocEventArgs(RevitAPIPreEventArgs):
    def __init__(self, document: Any, cancellable: bool = True) -> None:
        super().__init__(cancellable)
        self._document = document

    @property
    def Document(self) -> Any:
        return self._document


class DocumentSavingEventArgs(RevitAPIPreDocEventArgs):
    pass


class DocumentSavingAsEventArgs(RevitAPIPreDocEventArgs):
    def __init__(self, document: Any, path: str, as_central: bool = False) -> None:
        super().__init__(document)
        self.PathName = path
        self.IsSavingAsCentralFile = as_central


class DocumentClosingEventArgs(RevitAPIPreDocEventArgs):
    def __init__(self, document: Any, document_id: int) -> None:
        super().__init__(document)
        self.DocumentId = document_id


class DocumentSynchronizingWithCentralEventArgs(RevitAPIPreDocEventArgs):
    def __init__(self, document: Any, comments: str = "", location: str = "") -> None:
        super().__init__(document)
        self.Comments = comments
        self.Location = location
        self.Options = None


class FileExportingEventArgs(RevitAPIPreDocEventArgs):
    def __init__(self, document: Any, path: str, file_format: Any) -> None:
        super().__init__(document)
        self.Path = path
        self.Format = file_format
        self.BackgroundOperation = False


# --- dialogs (Autodesk.Revit.UI.Events) ------------------------------------------------------------

class DialogBoxShowingEventArgs(RevitAPIPreEventArgs):
    def __init__(self, dialog_id: str, button_codes: tuple[int, ...]) -> None:
        super().__init__(cancellable=False)
        self._dialog_id = dialog_id
        self._button_codes = tuple(button_codes)
        self._overridden: int | None = None

    @property
    def DialogId(self) -> str:
        return self._dialog_id

    def OverrideResult(self, resultCode: int) -> bool:
        if int(resultCode) not in self._button_codes:
            return False
        self._overridden = int(resultCode)
        return True


class TaskDialogShowingEventArgs(DialogBoxShowingEventArgs):
    def __init__(self, dialog_id: str, message: str, button_codes: tuple[int, ...]) -> None:
        super().__init__(dialog_id, button_codes)
        self._message = message

    @property
    def Message(self) -> str:
        return self._message


class MessageBoxShowingEventArgs(DialogBoxShowingEventArgs):
    def __init__(self, message: str, dialog_type: int, button_codes: tuple[int, ...]) -> None:
        super().__init__("", button_codes)
        self._message = message
        self._dialog_type = dialog_type

    @property
    def Message(self) -> str:
        return self._message

    @property
    def DialogType(self) -> int:
        return self._dialog_type
