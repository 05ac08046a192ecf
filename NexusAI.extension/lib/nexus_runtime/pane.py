"""The dockable pane: the chat page for this Revit (WebView2 when safe) and an "Open in browser" button
that always works. Revit-facing (WPF). Everything here runs on the UI thread; the connection state is
read from the runtime once a second by a DispatcherTimer, never pushed from the socket thread."""
import os

from pyrevit import forms
from System import TimeSpan
from System.Diagnostics import Process
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
        self._embedding_decided = False
        self._shown_url = None
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
        if not self._embedding_decided:
            self._decide_embedding(runtime)
        url = status["chat_url"]
        if self._embedded is not None and url and url != self._shown_url:
            self._embedded.navigate(url)
            self._shown_url = url

    def _decide_embedding(self, runtime):
        self._embedding_decided = True
        embed, reason = webview.decide(runtime.settings)
        self.browser_note.Text = reason if embed else reason + " Use \"Open chat in browser\"."
        if embed:
            try:
                self._embedded = webview.EmbeddedChat(self.browser_host, runtime.log)
                self._embedded.start()
            except Exception as exc:
                self._embedded = None
                self.browser_note.Text = "WebView2 could not start ({0}). Use \"Open chat in browser\".".format(exc)

    def open_in_browser_click(self, sender, args):
        runtime = registry.current_runtime()
        url = runtime.status()["chat_url"] if runtime is not None else None
        if url:
            Process.Start(url)

    def connect_click(self, sender, args):
        runtime = registry.current_runtime()
        if runtime is not None:
            runtime.toggle_connection()
            self.refresh()


def register():
    """startup.py only: Revit accepts dockable panes while it starts up."""
    if not forms.is_registered_dockable_panel(ChatPane):
        forms.register_dockable_panel(ChatPane, default_visible=False)


def open_pane():
    forms.open_dockable_panel(PANE_ID)
