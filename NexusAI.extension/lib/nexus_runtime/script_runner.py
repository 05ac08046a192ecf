"""Run one script with its stdout and stderr captured (capped, in the order written) and its failure
described by script line. Both streams are replaced for the run: pyRevit shuts down an engine's own
streams when another engine of the same type starts, and what a script writes to stderr
(`traceback.print_exc()`, warnings) is part of what it has to say.

Plain Python: the executor gives it a namespace (doc, uidoc, DB, UI, nexus_changes) and a name such as
"<nexus-script>"; tracebacks are trimmed to the frames of that script so the model sees its own lines.
"""
import sys
import traceback
import warnings

from nexus_runtime import protocol
from nexus_runtime.deadline import (
    CANCELLED_MESSAGE,
    CHECK_NAME,
    Deadline,
    ScriptCancelled,
    ScriptTimeout,
    compile_with_checks,
)
from nexus_runtime.jobs import monotonic

SCRIPT_FILENAME = "<nexus-script>"
EPILOGUE_FILENAME = "<nexus-epilogue>"
DEFAULT_STDOUT_LIMIT = 1000000  # characters kept from what a script prints


class CappedWriter(object):
    """A file-like stdout that keeps the first `limit` characters and notes that it dropped the rest."""

    encoding = "utf-8"

    def __init__(self, limit=DEFAULT_STDOUT_LIMIT):
        self.limit = limit
        self.truncated = False
        self.softspace = 0  # used by the Python 2 print statement
        self._parts = []
        self._size = 0

    def write(self, text):
        if not isinstance(text, protocol.STRING_TYPES):
            text = str(text)
        room = self.limit - self._size
        if room <= 0:
            if text:
                self.truncated = True
            return
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self._parts.append(text)
        self._size += len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def getvalue(self):
        return "".join(self._parts)


class ScriptOutcome(object):
    def __init__(self, ok, stdout, error, stdout_truncated, timed_out=False, cancelled=False):
        self.ok = ok
        self.stdout = stdout
        self.error = error  # protocol.error_info dict or None
        self.stdout_truncated = stdout_truncated
        self.timed_out = timed_out
        self.cancelled = cancelled  # stopped at a checkpoint because its run was cancelled


def run_script(code, namespace, filename=SCRIPT_FILENAME, stdout_limit=DEFAULT_STDOUT_LIMIT, timeout_s=None,
               clock=monotonic, abort=None):
    """`abort`: an AbortFlag (aborts.py); once set, the script stops at its next checkpoint."""
    writer = CappedWriter(stdout_limit)
    deadline = Deadline(filename, timeout_s, clock, abort) if (timeout_s or abort is not None) else None
    saved_stdout, saved_stderr, saved_trace = sys.stdout, sys.stderr, sys.gettrace()
    saved_showwarning = warnings.showwarning
    sys.stdout = writer
    sys.stderr = writer
    warnings.showwarning = _warning_writer(writer)
    error = None
    try:
        # dont_inherit: the script gets its own dialect, not this module's __future__ flags.
        if deadline is not None:
            compiled = compile_with_checks(code, filename)
            namespace[CHECK_NAME] = deadline.check
            sys.settrace(deadline.global_trace)
        else:
            compiled = compile(code, filename, "exec", 0, True)
        eval(compiled, namespace)
    except SyntaxError:
        error = describe_syntax_error(sys.exc_info()[1])
    except SystemExit:
        pass  # sys.exit() in a script ends it normally
    except ScriptCancelled:
        error = protocol.error_info("Cancelled", CANCELLED_MESSAGE)
    except ScriptTimeout:
        error = describe_exception(sys.exc_info(), code, filename)
    except Exception:
        error = describe_exception(sys.exc_info(), code, filename)
    finally:
        sys.settrace(saved_trace)
        sys.stdout = saved_stdout
        sys.stderr = saved_stderr
        warnings.showwarning = saved_showwarning
    cancelled = deadline is not None and deadline.cancelled
    timed_out = deadline is not None and deadline.fired and not cancelled
    if cancelled:
        error = protocol.error_info("Cancelled", CANCELLED_MESSAGE)  # even if the script swallowed it
    elif timed_out and error is None:
        error = protocol.error_info("ScriptTimeout", "the script ran longer than its {0:g} s limit".format(timeout_s))
    return ScriptOutcome(error is None, writer.getvalue(), error, writer.truncated, timed_out, cancelled)


def _warning_writer(writer):
    def show(message, category, filename, lineno, file=None, line=None):
        writer.write(warnings.formatwarning(message, category, filename, lineno, line))
    return show


def describe_syntax_error(exc):
    line = getattr(exc, "lineno", None)
    text = (getattr(exc, "text", None) or "").rstrip("\n")
    detail = '  line {0}\n    {1}\n'.format(line, text.strip()) if text else ""
    message = getattr(exc, "msg", None) or str(exc)
    return protocol.error_info("SyntaxError", message, line, detail + "SyntaxError: " + message)


def describe_exception(exc_info, code, filename):
    kind, value, tb = exc_info
    source_lines = code.splitlines()
    frames = [entry for entry in traceback.extract_tb(tb) if entry[0] == filename]
    line = frames[-1][1] if frames else None
    parts = ["Traceback (most recent call last):\n"]
    for entry in frames:
        lineno, function = entry[1], entry[2]
        parts.append('  File "{0}", line {1}, in {2}\n'.format(filename, lineno, function))
        if lineno and 0 < lineno <= len(source_lines):
            parts.append("    " + source_lines[lineno - 1].strip() + "\n")
    name = getattr(kind, "__name__", "Exception")
    message = _exception_message(value)
    parts.append("{0}: {1}".format(name, message))
    return protocol.error_info(name, message, line, "".join(parts))


def _exception_message(value):
    # .NET exceptions surfaced by IronPython carry their text in Message
    message = getattr(value, "Message", None)
    if message:
        return str(message)
    return str(value)
