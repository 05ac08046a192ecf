"""Waking Revit's main thread once the ExternalEvent is raised. Revit-facing (Win32 through ctypes).

Revit runs a raised external event when it idles, and it raises no Idling while the person is away (no
input, Revit in the background): a job would wait until someone moves the mouse, and the chat would be
told "Revit is busy". Posting a message to Revit's main window wakes its message loop; once the loop has
handled it, Revit idles and runs the event. WM_NULL asks the window to do nothing else.
"""
WM_NULL = 0


def main_window_waker(uiapp, log):
    """A `wake()` for the dispatcher, or None where window messages cannot be posted. Main thread only
    (reads the window handle)."""
    handle = uiapp.MainWindowHandle.ToInt64()
    post = _post_message_function()
    if post is None or not handle:
        log.write("Revit's main window cannot be woken: jobs wait for Revit's own idle time")
        return None

    def wake():
        return bool(post(handle, WM_NULL, 0, 0))
    return wake


def _post_message_function():
    try:
        import ctypes
        function = ctypes.windll.user32.PostMessageW
        function.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
        function.restype = ctypes.c_int
        return function
    except Exception:  # no ctypes, or not Windows
        return None
