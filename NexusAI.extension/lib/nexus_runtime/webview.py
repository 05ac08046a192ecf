"""Embedding the chat page with WebView2, only when present and safe. Revit-facing (WPF, main thread).

The environment is created explicitly with --edge-webview-unique-window-class and a user-data folder
of our own before any Source is set: setting Source first would make WebView2 create a default
environment without that argument.
"""
import os
import tempfile

import clr

from nexus_runtime.browser_choice import UNIQUE_WINDOW_CLASS_ARGUMENT, embedded_browser_decision

WEBVIEW2_ASSEMBLIES = ("Microsoft.Web.WebView2.Core", "Microsoft.Web.WebView2.Wpf")


def available_runtime():
    """(assemblies_loaded, runtime_version or None)."""
    try:
        for name in WEBVIEW2_ASSEMBLIES:
            clr.AddReference(name)
        from Microsoft.Web.WebView2.Core import CoreWebView2Environment
    except Exception:
        return False, None
    try:
        return True, CoreWebView2Environment.GetAvailableBrowserVersionString()
    except Exception:
        return True, None


def decide(settings):
    loaded, version = available_runtime()
    return embedded_browser_decision(settings.embedded_browser, loaded, version, settings.webview2_min_major)


def user_data_folder(revit_version):
    """One folder per Revit version: two Revit versions open at once cannot share a WebView2 user-data
    folder created with different environment options."""
    root = os.environ.get("LOCALAPPDATA") or tempfile.gettempdir()
    return os.path.join(root, "NexusAI", "WebView2", "Revit {0}".format(revit_version))


class EmbeddedChat(object):
    """A WebView2 inside `host_panel` (a WPF panel with Children), navigated once it is initialised.
    `start()` must run inside dispatcher work on the UI thread (it needs the synchronization context)."""

    def __init__(self, host_panel, log, data_folder):
        from Microsoft.Web.WebView2.Wpf import WebView2
        self._log = log
        self._data_folder = data_folder
        self._host_panel = host_panel
        self._view = WebView2()
        self._ready = False
        self._pending_url = None
        host_panel.Children.Add(self._view)

    def remove(self):
        self._host_panel.Children.Remove(self._view)
        self._view.Dispose()

    def start(self):
        from Microsoft.Web.WebView2.Core import CoreWebView2Environment, CoreWebView2EnvironmentOptions
        from System import Action
        from System.Threading.Tasks import Task, TaskScheduler
        options = CoreWebView2EnvironmentOptions()
        options.AdditionalBrowserArguments = UNIQUE_WINDOW_CLASS_ARGUMENT
        ui_thread = TaskScheduler.FromCurrentSynchronizationContext()
        creating = CoreWebView2Environment.CreateAsync(None, self._data_folder, options)
        creating.ContinueWith(Action[Task](self._environment_created), ui_thread)

    def _environment_created(self, task):
        try:
            from System import Action
            from System.Threading.Tasks import Task, TaskScheduler
            ensuring = self._view.EnsureCoreWebView2Async(task.Result)
            ensuring.ContinueWith(Action[Task](self._initialised), TaskScheduler.FromCurrentSynchronizationContext())
        except Exception as exc:
            self._log.write("WebView2 could not start: {0}".format(exc))

    def _initialised(self, task):
        if task.IsFaulted:
            self._log.write("WebView2 could not start: {0}".format(task.Exception))
            return
        self._ready = True
        if self._pending_url:
            self.navigate(self._pending_url)

    def navigate(self, url):
        if not self._ready:
            self._pending_url = url
            return
        from System import Uri
        self._view.Source = Uri(url)
