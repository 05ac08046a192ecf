"""Script deadlines that bite, even through a bare `except:`.

Two mechanisms share one deadline:
- a trace hook on the script's own frames raises ScriptTimeout at the first line past the deadline;
- the script is compiled with a check call at the head of every loop body, exception handler, `finally`
  block and function body. A bare `except:` catches the first ScriptTimeout (it is a BaseException), and
  CPython drops a trace hook whose exception escaped it, so a stubborn loop would run on untraced; the
  checks raise again at its next iteration, handler or call, until the script ends.
A script whose syntax tree this interpreter cannot compile back runs with the trace hook alone.
Plain Python (IronPython 2.7 and CPython 3).
"""
import ast

CHECK_NAME = "__nexus_deadline__"


class ScriptTimeout(BaseException):
    """Raised inside a script that outlived its deadline. Not an Exception: `except Exception` in the
    script does not swallow it."""


class Deadline(object):
    def __init__(self, filename, timeout_s, clock):
        self._filename = filename
        self._timeout_s = timeout_s
        self._clock = clock
        self._deadline = clock() + timeout_s
        self.fired = False

    def message(self):
        return "the script ran longer than its {0:g} s limit and was stopped".format(self._timeout_s)

    def check(self):
        """Called by the inserted checks: raises every time once the deadline has passed."""
        if self._clock() > self._deadline:
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


def _check_statement(anchor):
    call = ast.Call(func=ast.Name(id=CHECK_NAME, ctx=ast.Load()), args=[], keywords=[])
    if "starargs" in ast.Call._fields:  # Python 2.7's Call node
        call.starargs = None
        call.kwargs = None
    return ast.copy_location(ast.Expr(value=call), anchor)


try:
    STRING_TYPES = (str, unicode)  # noqa: F821 (IronPython 2.7)
except NameError:
    STRING_TYPES = (str,)


def _is_docstring(statement):
    if not isinstance(statement, ast.Expr):
        return False
    if hasattr(ast, "Constant"):
        return isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, STRING_TYPES)
    return isinstance(statement.value, ast.Str)  # Python 2.7


def _with_check(body, anchor):
    if not body:
        return body
    start = 1 if _is_docstring(body[0]) else 0  # a function's docstring stays first
    return body[:start] + [_check_statement(body[start] if start < len(body) else anchor)] + body[start:]


class _CheckInserter(ast.NodeTransformer):
    def _body(self, node):
        self.generic_visit(node)
        node.body = _with_check(node.body, node)
        return node

    visit_For = _body
    visit_While = _body
    visit_FunctionDef = _body
    visit_ExceptHandler = _body

    def _finally(self, node):
        self.generic_visit(node)
        if getattr(node, "finalbody", None):
            node.finalbody = _with_check(node.finalbody, node.finalbody[0])
        return node

    visit_Try = _finally  # Python 3
    visit_TryFinally = _finally  # Python 2.7


def compile_with_checks(code, filename):
    """Compiled code with deadline checks inserted; SyntaxError as plain compile() raises it."""
    try:
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST, True)
        tree = ast.fix_missing_locations(_CheckInserter().visit(tree))
        return compile(tree, filename, "exec", 0, True)
    except SyntaxError:
        raise
    except Exception:  # an interpreter that cannot compile a syntax tree: the trace hook alone
        return compile(code, filename, "exec", 0, True)
