"""Script deadlines that bite, even through a bare `except:`.

Two mechanisms share one deadline:
- a trace hook on the script's own frames raises ScriptTimeout at the first line past the deadline;
- the script is compiled with a check call at the head of every loop body, exception handler, `finally`
  block and function body. A bare `except:` catches the first ScriptTimeout (it is a BaseException), and
  CPython drops a trace hook whose exception escaped it, so a stubborn loop would run on untraced; the
  checks raise again at its next iteration, handler or call, until the script ends.
The same checks stop a script whose run was cancelled (an `abort` from the cloud sets its AbortFlag, see
aborts.py): they raise ScriptCancelled from then on, whatever the deadline.
The checks are inserted into the source text, on the lines where the parse puts those statements, and
the text is compiled: compiling a rewritten syntax tree would lose every source position under
IronPython 2.7 (its `_ast` round trip builds nodes without spans), so tracebacks would name wrong lines
and trace "line" events would never fire. Line numbers stay exactly those of the script. A script whose
rewritten text does not compile runs with the trace hook alone.
Plain Python (IronPython 2.7 and CPython 3).
"""
import ast
import sys

CHECK_NAME = "__nexus_deadline__"


class ScriptTimeout(BaseException):
    """Raised inside a script that outlived its deadline. Not an Exception: `except Exception` in the
    script does not swallow it."""


class ScriptCancelled(BaseException):
    """Raised inside a script whose run was cancelled (its AbortFlag is set); a BaseException too."""


CANCELLED_MESSAGE = "cancelled while running: rolled back, the model is unchanged"


class Deadline(object):
    def __init__(self, filename, timeout_s, clock, abort=None):
        self._filename = filename
        self._timeout_s = timeout_s
        self._clock = clock
        self._deadline = clock() + timeout_s if timeout_s else None
        self._abort = abort  # an AbortFlag, or None
        self.fired = False
        self.cancelled = False

    def message(self):
        return "the script ran longer than its {0:g} s limit and was stopped".format(self._timeout_s)

    def check(self):
        """Called by the inserted checks: raises every time once the deadline has passed or the run was
        cancelled."""
        if self._abort is not None and self._abort.is_set():
            self.cancelled = True
            raise ScriptCancelled(CANCELLED_MESSAGE)
        if self._deadline is not None and self._clock() > self._deadline:
            self.fired = True
            raise ScriptTimeout(self.message())

    def global_trace(self, frame, event, arg):
        if frame.f_code.co_filename == self._filename:
            return self.local_trace
        return None

    def local_trace(self, frame, event, arg):
        if event == "line":  # raising on an 'exception' event would replace the script's own traceback
            self.check()
        return self.local_trace


try:
    STRING_TYPES = (str, unicode)  # noqa: F821 (IronPython 2.7)
except NameError:
    STRING_TYPES = (str,)

STATEMENT_CHECK = CHECK_NAME + "(); "
EXPRESSION_CHECK = CHECK_NAME + "() or "  # the check returns None, so `None or x` is x
_COMPOUND = ("For", "While", "If", "With", "Try", "TryExcept", "TryFinally", "TryStar", "FunctionDef", "ClassDef",
             "AsyncFunctionDef", "AsyncFor", "AsyncWith", "Match")
_DEFINITIONS = ("FunctionDef", "ClassDef", "AsyncFunctionDef")
_LOOSE_EXPRESSIONS = ("IfExp", "Lambda")  # bind more loosely than `or`: a prefix would change their meaning
_COLUMNS_ARE_CHARACTERS = sys.platform == "cli"  # IronPython parses text; CPython reports UTF-8 byte offsets


def _kind(node):
    return node.__class__.__name__


def _is_docstring(statement):
    if not isinstance(statement, ast.Expr):
        return False
    if hasattr(ast, "Constant") and isinstance(statement.value, ast.Constant):
        return isinstance(statement.value.value, STRING_TYPES)
    return _kind(statement.value) == "Str"  # Python 2.7


def _check_site(body, skip_docstring=False):
    """Where a check runs each time `body` starts: ("statement", node) before a simple statement, or
    ("expression", node) before the header expression of a compound one; None where no place is safe."""
    statements = list(body)
    if skip_docstring and statements and _is_docstring(statements[0]):
        statements = statements[1:]
    for statement in statements:
        kind = _kind(statement)
        if kind not in _COMPOUND:
            return "statement", statement
        if kind in _DEFINITIONS:
            continue  # a definition runs nothing: the next statement is the head of the body's work
        if kind in ("If", "While"):
            expression = statement.test
        elif kind == "For":
            expression = statement.iter
        elif kind == "With":
            expression = statement.items[0].context_expr if hasattr(statement, "items") else statement.context_expr
        elif kind in ("Try", "TryExcept", "TryFinally", "TryStar"):
            return _check_site(statement.body)
        else:
            return None
        if _kind(expression) in _LOOSE_EXPRESSIONS:
            return None
        return "expression", expression
    return None


def _bodies(tree):
    """Every statement list that must start with a check: loop, function, handler and finally bodies."""
    for node in ast.walk(tree):
        kind = _kind(node)
        if kind in ("For", "While", "AsyncFor"):
            yield node.body, False
        elif kind in ("FunctionDef", "AsyncFunctionDef"):
            yield node.body, True
        elif kind == "ExceptHandler":
            yield node.body, False
        if getattr(node, "finalbody", None):
            yield node.finalbody, False


def _column(line, col_offset):
    if _COLUMNS_ARE_CHARACTERS:
        return col_offset
    try:
        return len(line.encode("utf-8")[:col_offset].decode("utf-8"))
    except UnicodeError:
        return col_offset


def insert_checks(code, tree):
    """The script's text with a check call at every site, on the same lines (columns shift, lines do not)."""
    sites = set()
    for body, skip_docstring in _bodies(tree):
        site = _check_site(body, skip_docstring)
        if site is not None:
            kind, node = site
            sites.add((node.lineno, node.col_offset, STATEMENT_CHECK if kind == "statement" else EXPRESSION_CHECK))
    lines = code.split("\n")
    for lineno, col_offset, text in sorted(sites, reverse=True):
        line = lines[lineno - 1]
        column = _column(line, col_offset)
        lines[lineno - 1] = line[:column] + text + line[column:]
    return "\n".join(lines)


def compile_with_checks(code, filename):
    """Compiled code with deadline checks inserted; SyntaxError as plain compile() raises it."""
    tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST, True)
    try:
        checked = insert_checks(code, tree)
        return compile(checked, filename, "exec", 0, True)
    except Exception:  # a site this rewrite cannot handle, a parse without positions: the trace hook alone
        pass
    return compile(code, filename, "exec", 0, True)
