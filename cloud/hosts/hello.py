"""A host's `hello`, parsed once when it connects, as a typed value."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from shared_contract.host_messages import Hello as HelloMessage


@dataclass(frozen=True, eq=False)  # equality is the wire form's (see __eq__); unhashable like a dict
class Hello(HelloMessage, Mapping[str, Any]):
    """What a host runtime said about itself: shared_contract's Hello (`hello.document`, `hello.has("hold")`),
    which also reads like the message it came from (`hello["document"]`) for code that wants the wire form."""

    @classmethod
    def parse(cls, message: dict[str, Any]) -> Hello:
        """The one way in: a hello message as it came over the wire (a dict), checked against
        shared_contract's schema (ContractError names the field that is wrong)."""
        if not isinstance(message, dict):
            raise TypeError(f"Hello.parse takes the hello message (a dict), not {type(message).__name__}")
        return cls.from_dict(message)

    @property
    def title(self) -> str:
        return str(self.document["title"])

    @property
    def python_major(self) -> int | None:
        """The major version the host's scripts run on, when its python_version starts with one."""
        head = self.python_version.strip().split(".", 1)[0]
        return int(head) if head.isdigit() else None

    @property
    def raw(self) -> dict[str, Any]:
        return self.to_dict()

    def as_message(self) -> dict[str, Any]:
        """The hello as it came over the wire (a plain dict, for JSON)."""
        return self.to_dict()

    def __eq__(self, other: object) -> bool:
        """Equal to another Hello or a message with the same wire form."""
        if isinstance(other, HelloMessage):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    # Mapping over the wire form
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())
