"""Fake Autodesk.Revit.Exceptions (the few the runtime and the tests meet)."""
from __future__ import annotations

from .common import RevitApiException


class ApplicationException(RevitApiException):
    pass


class ArgumentException(ApplicationException):
    pass


class ArgumentsInconsistentException(ArgumentException):
    pass


class InvalidOperationException(ApplicationException):
    pass


class InvalidObjectException(InvalidOperationException):
    pass


class ModificationOutsideTransactionException(InvalidOperationException):
    pass


class ModificationForbiddenException(InvalidOperationException):
    pass


class OperationCanceledException(ApplicationException):
    pass
