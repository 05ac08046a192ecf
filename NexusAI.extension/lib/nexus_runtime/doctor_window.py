"""The Doctor's pass/fail table in Revit: a modal window on the main thread. Revit-facing (WPF)."""
import os

from pyrevit import forms

XAML = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doctor.xaml")


class DoctorWindow(forms.WPFWindow):
    def __init__(self, table, sent_note):
        forms.WPFWindow.__init__(self, XAML)
        self.report_text.Text = table
        self.sent_text.Text = sent_note

    def close_click(self, sender, args):
        self.Close()
