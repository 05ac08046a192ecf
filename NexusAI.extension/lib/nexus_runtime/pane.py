"""The dockable pane: the chat page for this Revit (WebView2 when safe) and an "Open in browser" button
that always works. Revit-facing (WPF). Everything here runs on the UI thread; the connection state is
read from the runtime once a second by a DispatcherTimer, never pushed from the socket thread.

pyRevit builds the pane during Revit's OnStartup, where the UI thread has no synchronization context
yet, and WebView2's asynchronous start needs one. So the WebView2 is created when WPF raises the pane's
Loaded event (it joined Revit's window), through the dispatcher; a start that fails is tried again the
next time the pane is loaded.
"""
import os

from pyrevit import forms
from System import Action, TimeSpan
from System.Diagnostics import Process, ProcessStartInfo
from System.Windows.Threading import DispatcherTimer

from nexus_runtime import registry, webview

PANE_ID = "5d3f8c1e-6b7a-4f2e-9c41-2a7e0b9d6f13"


class ChatPane(forms.WPFPanel):
    panel_id = PANE_ID
    panel_title = "NexusAI"
    panel_source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pane.xaml")

    def __init__(self):
        forms.WPFPanel.__init__(self)
        self._embedded = None
        self._embed = None  # (embed, reason), decided once
        self._shown_url = None
        self.Loaded += self._on_loaded
        self._timer = DispatcherTimer()
        self._timer.Interval = TimeSpan.FromSeconds(1)
        self._timer.Tick += self._on_tick
        self._timer.Start()
        self.refresh()

    def _on_tick(self, sender, args):
        try:
            self.refresh()
        except Exception as exc:  # a timer callback must not throw into WPF
            self.status_text.Text = "NexusAI pane error: {0}".format(exc)

    def refresh(self):
        runtime = registry.current_runtime()
        if runtime is None:
            self.status_text.Text = "The NexusAI runtime is not running. Reload pyRevit."
            return
        status = runtime.status()
        self.status_text.Text = status["summary"]
        self.connect_button.Content = "Disconnect" if status["wanted"] else "Connect"
        self.open_browser_button.IsEnabled = bool(status["chat_url"])
        if self._embed is None:
            self._decide_embedding(runtime)
        url = status["chat_url"]
        if self._embedded is not None and url and url != self._shown_url:
            self._embedded.navigate(url)
            self._shown_url = url

    def _decide_embedding(self, runtime):
        self._embed = webview.decide(runtime.settings)
        embed, reason = self._embed
        self.browser_note.Text = reason if embed else reason + " Use \"Open chat in browser\"."

    def _on_loaded(self, sender, args):
        try:
            self.Dispatcher.BeginInvoke(Action(self._start_embedded))
        except Exception as exc:  # a WPF event handler must not throw into Revit
            self.browser_note.Text = "WebView2 could not start ({0}). Use \"Open chat in browser\".".format(exc)

    def _start_embedded(self):
        runtime = registry.current_runtime()
        if self._embedded is not None or runtime is None:
            return
        if self._embed is None:
            self._decide_embedding(runtime)
        if not self._embed[0]:
            return
        embedded = webview.EmbeddedChat(self.browser_host, runtime.log,
                                        webview.user_data_folder(runtime.revit_version))
        try:
            embedded.start()
        except Exception as exc:
            embedded.remove()
            runtime.log.write("WebView2 could not start: {0}".format(exc))
            self.browser_note.Text = ("WebView2 could not start ({0}); it is tried again when the pane is shown. "
                                      "Use \"Open chat in browser\".").format(exc)
            return
        self._embedded = embedded
        self._shown_url = None
        self.refresh()

    def open_in_browser_click(self, sender, args):
        url = None
        try:
            runtime = registry.current_runtime()
            url = runtime.status()["chat_url"] if runtime is not None else None
            if url:
                open_in_browser(url)
        except Exception as exc:  # a click handler must not throw into Revit
            self.browser_note.Text = "The browser could not be opened ({0}). The chat is at {1}".format(
                exc, url)

    def connect_click(self, sender, args):
        runtime = registry.current_runtime()
        if runtime is not None:
            runtime.toggle_connection()
            self.refresh()


def open_in_browser(url):
    """The default browser. Through the shell: on .NET 8 (Revit 2025+) UseShellExecute defaults to False
    and Process.Start(url) would take the URL for a program and throw."""
    info = ProcessStartInfo(url)
    info.UseShellExecute = True
    Process.Start(info)


def register():
    """startup.py only: Revit accepts dockable panes while it starts up."""
    if not forms.is_registered_dockable_panel(ChatPane):
        forms.register_dockable_panel(ChatPane, default_visible=False)


def open_pane():
    forms.open_dockable_panel(PANE_ID)
