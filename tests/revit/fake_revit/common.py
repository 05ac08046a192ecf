"""Shared pieces of the fake: .NET-style enums, the current fake Revit session, API-context checks."""
from __future__ import annotations

import threading
from typing import Any


class EnumValue:
    """A .NET enum member as IronPython shows it: str() gives the member name, == compares values."""

    def __init__(self, enum_name: str, name: str, value: int) -> None:
        self._enum_name = enum_name
        self._name = name
        self._value = value

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"{self._enum_name}.{self._name}"

    def __int__(self) -> int:
        return self._value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EnumValue):
            return self._enum_name == other._enum_name and self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._enum_name, self._value))


def make_enum(enum_name: str, members: dict[str, int] | str) -> type:
    if isinstance(members, str):
        members = {name: index for index, name in enumerate(members.split())}
    attributes = {name: EnumValue(enum_name, name, value) for name, value in members.items()}
    return type(enum_name, (), attributes)


class RevitApiException(Exception):
    """Base of the fake Autodesk.Revit.Exceptions; .Message like a .NET exception."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.Message = message


class Session:
    """Process-wide state of the one fake Revit the tests run: API version and the main thread."""

    version = 2026
    world: Any = None
    main_thread: threading.Thread | None = None
    enforce_api_context = True
    violations: list[str] = []

    @classmethod
    def check_api_context(cls, what: str) -> None:
        """Real Revit refuses API calls from other threads (outside a valid API context)."""
        if not cls.enforce_api_context or cls.main_thread is None:
            return
        if threading.current_thread() is not cls.main_thread:
            cls.violations.append(f"{what} on thread {threading.current_thread().name}")
            from .exceptions import InvalidOperationException
            raise InvalidOperationException(
                "Attempting to access the Revit API outside of a valid Revit API context (" + what + ")")


def net_list(items: Any = ()) -> NetList:
    return NetList(items)


class NetList(list):
    """System.Collections.Generic.List[T] / ICollection[T] as IronPython exposes it."""

    @property
    def Count(self) -> int:
        return len(self)

    def Add(self, item: Any) -> None:
        self.append(item)

    def Remove(self, item: Any) -> bool:
        if item in self:
            self.remove(item)
            return True
        return False

    def Contains(self, item: Any) -> bool:
        return item in self
