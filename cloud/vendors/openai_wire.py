"""Plumbing both OpenAI SDK adapters share (Responses and OpenAI-compatible Chat Completions).

`open_event_stream` (the SDK's streaming POST, events as JSON objects), `failure_from_sdk` /
`failure_from_body` (SDK errors to the retry helper's VendorFailure) and `data_url` (an image part as
a data URL).
"""
from __future__ import annotations

from typing import Any

import openai

from cloud.vendors.retry import VendorFailure, parse_retry_after

# Error codes (in a mid-stream error event or a failed response) worth another try.
RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "overloaded", "server_is_overloaded",
                             "internal_error", "service_unavailable", "timeout"})


def open_event_stream(client: openai.OpenAI, path: str, body: dict[str, Any]) -> openai.Stream[Any]:
    """POST `body` and stream the server-sent events back as JSON objects.

    The SDK does the HTTP, auth, SSE decoding, `[DONE]` and mid-stream `{"error": ...}` handling (raising
    APIError) exactly as for `client.responses.create(stream=True)` / `client.chat.completions.create(...)`;
    only the per-event pydantic models are skipped (they cost ~80% of the time per event, which
    capped an adapter near 10,000 chunks/s).
    """
    # `object` (not dict[...]) as the event type: the SDK then hands each decoded JSON object over untouched.
    return client.post(path, body=body, cast_to=object, stream=True, stream_cls=openai.Stream[object])


def failure_from_sdk(exc: openai.OpenAIError) -> VendorFailure:
    """Translate an SDK exception into one attempt's failure (retryable or not)."""
    if isinstance(exc, openai.APIStatusError):
        return VendorFailure(exc.status_code, _describe(exc), parse_retry_after(exc.response.headers))
    if isinstance(exc, openai.APIConnectionError):
        return VendorFailure(None, f"connection failed: {exc.message}")
    if isinstance(exc, openai.APIError):
        # A mid-stream `{"error": {...}}` frame: the HTTP status was 200, the body says what went wrong.
        return failure_from_body(exc.body, exc.message)
    return VendorFailure(None, str(exc), retryable=False)


def failure_from_body(body: object, fallback_message: str) -> VendorFailure:
    body = body if isinstance(body, dict) else {}
    code = body.get("code")
    message = str(body.get("message") or fallback_message)
    status = code if isinstance(code, int) else None
    kind = str(code or body.get("type") or "")
    retryable = (status is not None and (status == 429 or status >= 500)) or kind in RETRYABLE_CODES \
        or kind.endswith("server_error")
    label = f"{kind}: {message}" if kind and kind not in message else message
    return VendorFailure(status, f"mid-stream error: {label}", retryable=retryable)


def _describe(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    detail = body["error"] if isinstance(body.get("error"), dict) else body
    return str(detail.get("message") or exc.message)


def data_url(image: dict[str, Any]) -> str:
    return f"data:{image.get('media_type', 'image/png')};base64,{image['data']}"
