"""Waiting on Revit's main thread without freezing it. Revit-facing (WPF).

A sleep on the main thread stops its message loop: Windows marks Revit "Not Responding" and nothing
posted to the thread runs. `MessagePump.wait(s)` instead runs a nested dispatcher frame for `s` seconds,
so window messages keep flowing (repaint, a UI action posted meanwhile) while a held run waits.
"""
from System import TimeSpan
from System.Windows.Threading import Dispatcher, DispatcherFrame, DispatcherTimer


class MessagePump(object):
    def __init__(self):
        self._frame = None
        self._timer = DispatcherTimer()
        self._timer.Tick += self._on_tick

    def wait(self, seconds):
        """Pump the main thread's messages for `seconds`, then return."""
        self._frame = DispatcherFrame()
        self._timer.Interval = TimeSpan.FromSeconds(seconds)
        self._timer.Start()
        try:
            Dispatcher.PushFrame(self._frame)
        finally:
            self._timer.Stop()
            self._frame = None

    def _on_tick(self, sender, args):
        self._timer.Stop()
        if self._frame is not None:
            self._frame.Continue = False
