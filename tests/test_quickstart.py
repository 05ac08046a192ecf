"""The README's main-job command as a new user meets it: `nexus demo` on a busy port, its one-time link."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import requests

from tests.support.processes import read_until, stop


def test_the_demo_takes_the_next_free_port_and_prints_a_one_time_sign_in_link(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1"}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(key, None)
    demo = subprocess.Popen([sys.executable, "-m", "cloud.cli", "demo", "--port", str(taken),
                             "--db", str(tmp_path / "demo.db")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    try:
        link = read_until(demo, r"Open the chat:\s+(http://127\.0\.0\.1:(\d+)/\?signin=(\S+))", 180)
        url, port = link.group(1), int(link.group(2))
        assert port > taken and "nx_" not in url
        signed_in = requests.get(url, allow_redirects=False, timeout=10)
        assert signed_in.status_code == 302 and "nexus_session" in signed_in.cookies
        chat = requests.get(f"http://127.0.0.1:{port}/", cookies=signed_in.cookies, timeout=10)
        assert chat.status_code == 200 and 'id="prompt"' in chat.text
        assert requests.get(url, allow_redirects=False, timeout=10).status_code == 401  # used once already
    finally:
        stop(demo)
        busy.close()
