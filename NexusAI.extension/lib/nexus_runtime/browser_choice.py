"""Whether the dockable pane may embed WebView2, or must offer "Open in browser" only.

Revit hosts its own Chromium (CefSharp). A WebView2 built on another Chromium version registers the same
Win32 window classes and can crash Revit, unless the runtime understands
--edge-webview-unique-window-class. So: embed only when the user allows it, the WebView2 assemblies
load, and the installed runtime is recent enough to honour that switch.
"""

UNIQUE_WINDOW_CLASS_ARGUMENT = "--edge-webview-unique-window-class"


def runtime_major(version_string):
    """'149.0.3992.0' -> 149; None when no runtime is installed or the string is not a version."""
    if not version_string:
        return None
    head = str(version_string).strip().split(".")[0]
    return int(head) if head.isdigit() else None


def embedded_browser_decision(setting, assemblies_loaded, runtime_version, min_major):
    """(embed, reason): `reason` is shown in the pane when the browser button is used instead."""
    if str(setting).lower() == "off":
        return False, "The embedded browser is turned off in Settings."
    if not assemblies_loaded:
        return False, "WebView2 is not available in this Revit/pyRevit installation."
    major = runtime_major(runtime_version)
    if major is None:
        return False, "The Microsoft Edge WebView2 Runtime is not installed."
    if major < int(min_major):
        return False, ("The WebView2 Runtime {0} is older than {1}; it could collide with Revit's own "
                       "browser, so the chat opens in your default browser.").format(runtime_version, min_major)
    return True, "Embedded WebView2 runtime {0}.".format(runtime_version)
