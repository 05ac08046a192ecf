"""A host's `hello`, parsed once when it connects, as a typed value."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from shared_contract.validate import validate_host_message


@dataclass(frozen=True, eq=False)  # equality is the wire form's (see __eq__); unhashable like a dict
class Hello(Mapping[str, Any]):
    """What a host runtime said about itself. Reads like the message (`hello["document"]`) for code
    that wants the wire form, and typed (`hello.document`, `hello.has("hold")`) for everything else."""

    host_app: str
    host_version: str
    runtime_version: str
    python_version: str
    document: Mapping[str, Any]
    capabilities: frozenset[str] = frozenset()
    host_id: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, message: Mapping[str, Any]) -> Hello:
        """A Hello from a hello message (checked against shared_contract's schema), or the Hello itself."""
        if isinstance(message, Hello):
            return message
        validate_host_message(dict(message))
        return cls(host_app=message["host_app"], host_version=message["host_version"],
                   runtime_version=message["runtime_version"], python_version=message["python_version"],
                   document=MappingProxyType(dict(message["document"])),
                   capabilities=frozenset(message.get("capabilities") or ()), host_id=message.get("host_id"),
                   raw=MappingProxyType(dict(message)))

    def has(self, capability: str) -> bool:
        """Whether the host announced this capability (e.g. "hold", "context")."""
        return capability in self.capabilities

    @property
    def title(self) -> str:
        return str(self.document["title"])

    @property
    def python_major(self) -> int | None:
        """The major version the host's scripts run on, when its python_version starts with one."""
        head = self.python_version.strip().split(".", 1)[0]
        return int(head) if head.isdigit() else None

    def as_message(self) -> dict[str, Any]:
        """The hello as it came over the wire (a plain dict, for JSON)."""
        return dict(self.raw)

    def __eq__(self, other: object) -> bool:
        """Equal to another Hello or a message with the same wire form."""
        if isinstance(other, Hello):
            return dict(self.raw) == dict(other.raw)
        if isinstance(other, Mapping):
            return dict(self.raw) == dict(other)
        return NotImplemented

    # Mapping over the wire form
    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)
