"""Where `openai-compat` models may be reached: the server's own allow-list of OpenAI-compatible endpoints.

The server's operator names the endpoints; users only pick one:

    NEXUS_OPENAI_COMPAT_ENDPOINTS="local=http://127.0.0.1:11434/v1,vllm=http://gpu:8000/v1"
    OPENAI_COMPAT_BASE_URL=http://127.0.0.1:11434/v1      (the endpoint named "default")

A spec names an endpoint (`openai-compat:qwen3@local`), gives a URL that is on the list
(`openai-compat:qwen3@http://127.0.0.1:11434/v1`), or neither (`openai-compat:qwen3`: the default
endpoint, else the only one). OPENAI_COMPAT_API_KEY is sent to configured endpoints only.

Anything else is refused (ModelSpecError with status 403): otherwise any signed-in user could make the server
POST the system prompt, the transcript and the key to an address of their choosing (SSRF). This is
what Grafana does for its data-source proxy (`data_source_proxy_whitelist`): the operator lists the
hosts, a request never supplies one. The one exception is `nexus run` on a person's own machine: a URL given
on its command line is allowed for that process (`allow_command_line_url`), and the key is still never
sent to it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from cloud.vendors.base import ModelSpecError

ENDPOINTS_ENV = "NEXUS_OPENAI_COMPAT_ENDPOINTS"
BASE_URL_ENV = "OPENAI_COMPAT_BASE_URL"
DEFAULT_NAME = "default"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
URL_TARGET = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$", re.IGNORECASE)

_command_line_urls: set[str] = set()


@dataclass(frozen=True)
class Endpoint:
    url: str
    name: str | None  # None: a URL allowed on the command line only (it never receives the key)

    @property
    def label(self) -> str:
        """How the endpoint is named to users: its name, never its URL (which may carry credentials)."""
        return repr(self.name) if self.name else "given on the command line"


def normalise_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}" + (
        f"?{parts.query}" if parts.query else "")


def _valid_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def configured() -> dict[str, str]:
    """name -> base URL, as the operator set them (malformed entries are left out)."""
    out: dict[str, str] = {}
    for item in os.environ.get(ENDPOINTS_ENV, "").split(","):
        name, sep, url = item.strip().partition("=")
        if sep and NAME.match(name.strip()) and _valid_url(url.strip()):
            out[name.strip()] = url.strip()
    default = os.environ.get(BASE_URL_ENV, "").strip()
    if default and _valid_url(default) and DEFAULT_NAME not in out:
        out[DEFAULT_NAME] = default
    return out


def allow_command_line_url(spec_model: str) -> None:
    """`nexus run` on the person's own machine: a URL in the `MODEL@URL` given on its command line."""
    match = URL_TARGET.match(spec_model)
    if match and _valid_url(match["url"]):
        _command_line_urls.add(normalise_url(match["url"]))


def split_model(model: str) -> tuple[str, str | None]:
    """`MODEL@URL` or `MODEL@NAME` or `MODEL` -> (MODEL, the URL or name or None)."""
    match = URL_TARGET.match(model)
    if match:
        return match["model"], match["url"]
    name, sep, target = model.rpartition("@")
    if sep and name and NAME.match(target):
        return name, target
    if not model or (sep and not name):
        raise ModelSpecError(f"openai-compat model {model!r} must look like MODEL, MODEL@ENDPOINT or MODEL@URL")
    return model, None


def resolve(target: str | None) -> Endpoint:
    """The endpoint a spec's target names, or ModelSpecError saying which ones are allowed."""
    endpoints = configured()
    names = ", ".join(sorted(endpoints)) or "none configured"
    hint = f"allowed endpoints: {names} (the server's {ENDPOINTS_ENV} or {BASE_URL_ENV})"
    if target is None:
        if DEFAULT_NAME in endpoints:
            return Endpoint(endpoints[DEFAULT_NAME], DEFAULT_NAME)
        if len(endpoints) == 1:
            name, url = next(iter(endpoints.items()))
            return Endpoint(url, name)
        raise ModelSpecError(f"openai-compat: name an endpoint as MODEL@ENDPOINT; {hint}")
    if not target.lower().startswith(("http://", "https://")):
        if target in endpoints:
            return Endpoint(endpoints[target], target)
        raise ModelSpecError(f"openai-compat: no endpoint named {target!r}; {hint}", status=403)
    if not _valid_url(target):
        raise ModelSpecError("openai-compat: the endpoint URL must be http(s)://HOST[:PORT]/PATH")
    wanted = normalise_url(target)
    for name, url in endpoints.items():
        if normalise_url(url) == wanted:
            return Endpoint(url, name)
    if wanted in _command_line_urls:
        return Endpoint(target, None)
    raise ModelSpecError(f"openai-compat: this server does not reach URLs given in a request; {hint}", status=403)
