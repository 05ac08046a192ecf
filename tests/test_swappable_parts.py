"""The parts with a Redis twin (cloud/distributed/) answer the same calls as the in-process ones: the same
methods with the same parameters, so build_parts can hand either to the code that uses them."""
from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from cloud.distributed.redis_rendezvous import RedisToolResultChannel
from cloud.distributed.redis_runs import RedisRunRegistry
from cloud.rendezvous import ResultChannel, ToolResultChannel
from cloud.runs import RunRegistry


def _parameters(function: Callable) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def _methods(kind: type) -> list[str]:
    return sorted(n for n, v in vars(kind).items() if not n.startswith("_") and callable(v))


@pytest.mark.parametrize("channel", [ToolResultChannel, RedisToolResultChannel])
def test_both_rendezvous_have_every_method_of_the_protocol_with_its_parameters(channel):
    assert _methods(ResultChannel) == ["await_answer", "awaiting_decision", "close", "deliver_from_host",
                                       "deliver_tool_result", "open", "pending_tool_call", "wait"]
    for name in _methods(ResultChannel):
        assert _parameters(getattr(channel, name)) == _parameters(getattr(ResultChannel, name)), name


def test_both_run_registries_end_an_abandoned_run_the_same_way():
    assert _parameters(RunRegistry.end_abandoned) == _parameters(RedisRunRegistry.end_abandoned)
    registry = RunRegistry()
    assert registry.end_abandoned("s1", "the server restarted") is None  # nothing of a dead process lives here
    registry.close()
