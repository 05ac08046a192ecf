"""The review window for a held change: modal, Discard by default (Enter, Esc and closing it all discard).
Revit-facing (WPF, main thread).

Revit runs no ExternalEvent while a modal window is up, so the window's DispatcherTimer does the main
thread's work for the held run: it serves the jobs that arrive meanwhile (export_view, so the chat page's
preview renders the held state) and closes the window once the run is decided elsewhere (the cloud's
decide, the hold timeout). The decision logic lives in holds.py; this is only its face.
"""
import os

from pyrevit import forms
from System import TimeSpan
from System.Windows.Threading import DispatcherTimer

from nexus_runtime.holds import BY_REVIT, DISCARD, KEEP, ReviewPacing, countdown_text

XAML = os.path.join(os.path.dirname(os.path.abspath(__file__)), "review.xaml")
TICK_S = 0.1


class ReviewWindow(forms.WPFWindow):
    def __init__(self, run, pacing, serve, title, report, note, log):
        forms.WPFWindow.__init__(self, XAML)
        self._run = run
        self._pacing = pacing
        self._serve = serve  # serve() -> number of queued jobs it ran
        self._log = log
        self.Title = title
        self.report_text.Text = report
        self.highlight_text.Text = note
        self._update_countdown()
        self._timer = DispatcherTimer()
        self._timer.Interval = TimeSpan.FromSeconds(TICK_S)
        self._timer.Tick += self._on_tick

    def wait_for_decision(self):
        """Show the window until the run is decided; closing it without a choice discards."""
        self._pacing.window_shown = True
        self._timer.Start()
        try:
            self.ShowDialog()
        finally:
            self._timer.Stop()
        self._run.decide(DISCARD, BY_REVIT)  # no effect when a decision was already taken

    def keep_click(self, sender, args):
        self._run.decide(KEEP, BY_REVIT)
        self.Close()

    def discard_click(self, sender, args):
        self._run.decide(DISCARD, BY_REVIT)
        self.Close()

    def _on_tick(self, sender, args):
        try:
            if self._serve():
                self._pacing.note_activity()
            if self._pacing.next_step() == ReviewPacing.DONE:
                self.Close()
                return
            self._update_countdown()
        except Exception as exc:  # a timer callback must not throw into WPF
            self._log.write("review window tick failed: {0}".format(exc))

    def _update_countdown(self):
        self.countdown_text.Text = "Discarded in {0} unless you decide".format(
            countdown_text(self._pacing.seconds_left()))
