"""User settings (server URL, token, ...) and the URLs derived from them. Storage is pluggable."""
try:
    from urllib import quote  # IronPython 2.7
    from urlparse import urlsplit
except ImportError:
    from urllib.parse import quote, urlsplit

DEFAULTS = {
    "server_url": "http://127.0.0.1:8765",
    "token": "",
    "auto_connect": True,
    "embedded_browser": "auto",  # "auto": WebView2 only when present and safe; "off": browser button only
    "webview2_min_major": 149,  # first runtime with --edge-webview-unique-window-class
    "busy_after_s": 20.0,  # how long a command may wait for Revit to become idle
    "hold_timeout_s": 900.0,  # how long a held change waits for Keep or Discard; then it is discarded
    "review_window_after_s": 1.5,  # quiet time after a held result before the review window opens
    "heartbeat_s": 15.0,  # ping the server this often; silent for 3 heartbeats = a dead link, reconnect
}


class Settings(object):
    def __init__(self, **values):
        for key, default in DEFAULTS.items():
            setattr(self, key, values.get(key, default))

    @classmethod
    def from_mapping(cls, mapping):
        values = {}
        for key, default in DEFAULTS.items():
            if key in mapping and mapping[key] is not None:
                values[key] = _coerce(mapping[key], default)
        return cls(**values)

    def to_mapping(self):
        return dict((key, getattr(self, key)) for key in DEFAULTS)

    def is_complete(self):
        return bool(self.server_url and self.token)


def _coerce(value, default):
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        return str(value).strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, float):
        return float(value)
    if isinstance(default, int):
        return int(value)
    return value if value is not None else default


def normalize_server_url(url):
    """'https://nexus.example.com/' -> 'https://nexus.example.com'; raises ValueError when unusable."""
    url = (url or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("The server URL must start with http:// or https:// and name a host")
    return url


def websocket_url(server_url):
    url = normalize_server_url(server_url)
    scheme, rest = url.split("://", 1)
    return ("wss" if scheme == "https" else "ws") + "://" + rest + "/ws/host"


def chat_url(server_url, host_id=None):
    """The chat page bound to this Revit's connection (or unbound while not connected)."""
    url = normalize_server_url(server_url) + "/"
    if host_id:
        url += "?host=" + quote(host_id, safe="")
    return url


def apply_user_input(current, server_url_text, token_text):
    """Settings after the Settings dialog: a new URL (checked), and a new token unless left empty."""
    values = current.to_mapping()
    values["server_url"] = normalize_server_url(server_url_text)
    token = (token_text or "").strip()
    if token:
        values["token"] = token
    return Settings.from_mapping(values)
