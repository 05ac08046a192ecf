"""Running one piece of model code: compiled as "<script>", printing into a capped stream, errors trimmed
to the script's own frames so the model sees its line numbers and not the host's internals."""
from __future__ import annotations

import linecache
import os
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

STDOUT_CAP_BYTES = 2_000_000


class CappedOutput:
    """A text stream writing straight to a file descriptor until `cap` bytes, then dropping the rest.

    Writing to the descriptor as we go (one write per line) keeps what was printed even if the process
    is killed mid-script (a hang or a native crash), and interleaves correctly with native output.
    """

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, fd: int, cap: int = STDOUT_CAP_BYTES) -> None:
        self.fd = fd
        self.cap = cap
        self.written = 0
        self.truncated = False
        self._pending: list[str] = []

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending.append(text)
        if "\n" in text or sum(len(p) for p in self._pending) > 8192:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if not self._pending:
            return
        data = "".join(self._pending).encode("utf-8", errors="replace")
        self._pending.clear()
        room = self.cap - self.written
        if len(data) > room:
            data = data[:max(room, 0)]
            self.truncated = True
        if data:
            os.write(self.fd, data)
            self.written += len(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False


@dataclass
class ScriptOutcome:
    ok: bool
    error: dict[str, Any] | None = None


def run_code(code: str, filename: str, script_globals: dict[str, Any]) -> ScriptOutcome:
    """Compile and run `code`; never raises for anything the code does (SystemExit included)."""
    # Registering the source lets tracebacks show the offending line of the script.
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    try:
        compiled = compile(code, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return ScriptOutcome(False, _syntax_error(exc, filename))
    try:
        exec(compiled, script_globals)
    except SystemExit as exc:
        if exc.code in (None, 0):
            return ScriptOutcome(True)
        return ScriptOutcome(False, describe_exception(exc, filename))
    except BaseException as exc:  # noqa: B036 - a script's KeyboardInterrupt or GeneratorExit is its failure too
        return ScriptOutcome(False, describe_exception(exc, filename))
    return ScriptOutcome(True)


def _syntax_error(exc: SyntaxError, filename: str) -> dict[str, Any]:
    lines = traceback.format_exception_only(type(exc), exc)
    return {"type": type(exc).__name__, "message": exc.msg or str(exc), "line": exc.lineno,
            "traceback": "".join(lines).rstrip("\n")}


def describe_exception(exc: BaseException, filename: str) -> dict[str, Any]:
    """{type, message, line, traceback} with only the frames that belong to `filename`.

    The line is that of the innermost script frame; frames of IfcOpenShell or the host are dropped, and a
    note says how many, so the model reads where its own code went wrong.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    script_frames = [f for f in frames if f.filename == filename]
    hidden = len(frames) - len(script_frames)
    lines = ["Traceback (most recent call last):\n"]
    lines.extend(traceback.format_list(traceback.StackSummary.from_list(script_frames)))
    if hidden:
        lines.append(f"  ... {hidden} frame(s) inside libraries not shown\n")
    lines.extend(traceback.format_exception_only(type(exc), exc))
    line = script_frames[-1].lineno if script_frames else _first_script_line(exc.__traceback__, filename)
    message = str(exc) if not isinstance(exc, SystemExit) else f"the script called exit({exc.code!r})"
    return {"type": type(exc).__name__, "message": message, "line": line, "traceback": "".join(lines).rstrip("\n")}


def _first_script_line(tb: TracebackType | None, filename: str) -> int | None:
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            return tb.tb_lineno
        tb = tb.tb_next
    return None
