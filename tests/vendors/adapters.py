"""Each vendor's adapter through its real SDK, pointed at a loopback replay server, with fast retries; and the
`server`/`model` fixture pair a vendor's test module declares."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from cloud.vendors.anthropic import AnthropicModel
from cloud.vendors.base import ModelAdapter
from cloud.vendors.gemini import GeminiModel
from cloud.vendors.openai_responses import OpenAIResponsesModel
from cloud.vendors.retry import RetryPolicy
from tests.vendors.replay.base import ReplayServer


def anthropic_model(url: str, name: str = "claude-sonnet-4-6", key: str = "test-key") -> AnthropicModel:
    client = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
    return AnthropicModel(name, client=client, retry=RetryPolicy.fast())


def responses_model(url: str, name: str = "gpt-5.1", key: str = "sk-test-not-a-key") -> OpenAIResponsesModel:
    client = openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0)
    return OpenAIResponsesModel(name, client=client, policy=RetryPolicy.fast())


def gemini_model(url: str, name: str = "gemini-2.5-pro", key: str = "test-key") -> GeminiModel:
    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    return GeminiModel(name, client=client, retry=RetryPolicy.fast())


def replay_fixtures(replay: Callable[[], ReplayServer],
                    make_model: Callable[[str], ModelAdapter]) -> tuple[Any, Any]:
    """The fixtures `server` (a started replay server) and `model` (the adapter built on its URL), for a test
    module to bind: `server, model = replay_fixtures(AnthropicReplay, anthropic_model)`."""

    @pytest.fixture
    def server() -> Iterator[ReplayServer]:
        with replay() as running:
            yield running

    @pytest.fixture
    def model(server: ReplayServer) -> ModelAdapter:
        return make_model(server.url)

    return server, model
