"""Fake pyRevit (forms, script, userconfig, HOST_APP) and IronPython's `wpf` module.

`wpf.LoadComponent(obj, xaml)` parses the XAML for real: every x:Name element becomes an attribute of
`obj` and every Click="method" is wired to that method, as IronPython.Wpf does; a XAML file that is
not well-formed, or names a handler the class lacks, fails here as it would in Revit.
"""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import Any

from .common import Session
from .dotnet import FakeControl, Guid

XAML_NAME = "{http://schemas.microsoft.com/winfx/2006/xaml}Name"
EVENT_ATTRIBUTES = ("Click",)


class PyRevitException(Exception):
    pass


class WpfModule:
    @staticmethod
    def LoadComponent(target: Any, xaml_path: str) -> None:
        tree = ElementTree.parse(xaml_path)
        for node in tree.iter():
            tag = node.tag.split("}")[-1]
            attributes = {k.split("}")[-1]: v for k, v in node.attrib.items()}
            name = node.attrib.get(XAML_NAME) or node.attrib.get("Name")
            control = FakeControl(tag, attributes)
            if name:
                setattr(target, name, control)
            for event in EVENT_ATTRIBUTES:
                if event in node.attrib:
                    handler = getattr(target, node.attrib[event])  # AttributeError like IronPython.Wpf
                    control.Click += handler


class HostApp:
    @property
    def uiapp(self) -> Any:
        return Session.world.uiapp

    @property
    def app(self) -> Any:
        return Session.world.app

    @property
    def version(self) -> str:
        return Session.world.app.VersionNumber


HOST_APP = HostApp()


# --- pyrevit.forms ---------------------------------------------------------------------------------

class WPFPanel:
    panel_id: str | None = None
    panel_source: str | None = None
    panel_title = "Panel"

    def __init__(self) -> None:
        if not self.panel_id or not self.panel_source:
            raise PyRevitException('"panel_id" and "panel_source" must be set')
        from .dotnet import Dispatcher
        from .events import EventSlot
        self.Loaded = EventSlot("Loaded")
        self.Dispatcher = Dispatcher()
        WpfModule.LoadComponent(self, self.panel_source)


class WPFWindow:
    """pyrevit.forms.WPFWindow: a Window loaded from XAML (file path or literal string). ShowDialog runs the
    fake main thread's modal loop until Close(); Escape closes it when handle_esc (see press_escape)."""

    def __init__(self, xaml_source: str, literal_string: bool = False, handle_esc: bool = True,
                 set_owner: bool = True) -> None:
        Session.check_api_context("WPFWindow")
        if Session.world.windows_fail:
            raise PyRevitException("the window could not be created (XAML parse error)")
        if literal_string:
            raise PyRevitException("the fake loads XAML from files only")
        root = ElementTree.parse(xaml_source).getroot()
        if root.tag.split("}")[-1] != "Window":
            raise PyRevitException("a WPFWindow's XAML root must be a Window")
        WpfModule.LoadComponent(self, xaml_source)
        self.Title = root.attrib.get("Title", "")
        self._handle_esc = handle_esc
        self._closed = False
        self.shown_modal = False
        self.DialogResult: bool | None = None

    def ShowDialog(self) -> bool | None:
        self.shown_modal = True
        Session.world.run_modal(self)
        return self.DialogResult

    def show_dialog(self) -> bool | None:
        return self.ShowDialog()

    def Close(self) -> None:
        Session.check_api_context("Window.Close")
        self._closed = True

    def press_escape(self) -> None:
        """The person pressing Esc (pyRevit closes the window when handle_esc is set)."""
        if self._handle_esc:
            self.Close()


class _PanelProvider:
    def __init__(self, panel_type: Any, default_visible: bool) -> None:
        self.panel = panel_type()
        self._default_visible = default_visible

    def SetupDockablePane(self, data: Any) -> None:
        data.FrameworkElement = self.panel
        data.VisibleByDefault = self._default_visible


def _pane_id(panel_type_or_id: Any) -> Any:
    from . import ui
    panel_id = panel_type_or_id if isinstance(panel_type_or_id, str) else panel_type_or_id.panel_id
    return ui.DockablePaneId(Guid.Parse(panel_id))


def is_registered_dockable_panel(panel_type: Any) -> bool:
    from . import ui
    return ui.DockablePane.PaneExists(_pane_id(panel_type))


def register_dockable_panel(panel_type: Any, default_visible: bool = True) -> Any:
    if not issubclass(panel_type, WPFPanel):
        raise PyRevitException("Dockable pane must be a subclass of forms.WPFPanel")
    provider = _PanelProvider(panel_type, default_visible)
    HOST_APP.uiapp.RegisterDockablePane(_pane_id(panel_type), panel_type.panel_title, provider)
    return provider.panel


def open_dockable_panel(panel_type_or_id: Any) -> None:
    HOST_APP.uiapp.GetDockablePane(_pane_id(panel_type_or_id)).Show()


def alert(msg: str, title: str | None = None, sub_msg: str | None = None, **kwargs: Any) -> bool:
    Session.world.alerts.append((title, msg, sub_msg))
    return True


def ask_for_string(default: str | None = None, prompt: str | None = None, title: str | None = None,
                   **kwargs: Any) -> str | None:
    Session.world.prompts.append((title, prompt, default))
    answers = Session.world.prompt_answers
    return answers.pop(0) if answers else default


# --- pyrevit.script ------------------------------------------------------------------------------

def toggle_icon(new_state: bool, on_icon_path: str | None = None, off_icon_path: str | None = None,
                icon_size: int = 16) -> None:
    Session.world.button_icon_states.append(bool(new_state))


# --- pyrevit.userconfig ----------------------------------------------------------------------------

class ConfigSection:
    def __init__(self) -> None:
        self._options: dict[str, Any] = {}

    def has_option(self, name: str) -> bool:
        return name in self._options

    def get_option(self, name: str, default_value: Any = None) -> Any:
        return self._options.get(name, default_value)

    def set_option(self, name: str, value: Any) -> None:
        self._options[name] = value


class UserConfig:
    def __init__(self) -> None:
        self._sections: dict[str, ConfigSection] = {}
        self.saved = 0

    def has_section(self, name: str) -> bool:
        return name in self._sections

    def get_section(self, name: str) -> ConfigSection:
        if name not in self._sections:
            raise AttributeError(name)
        return self._sections[name]

    def add_section(self, name: str) -> ConfigSection:
        self._sections[name] = ConfigSection()
        return self._sections[name]

    def save_changes(self) -> None:
        self.saved += 1


class CurrentUserConfig:
    """`pyrevit.userconfig.user_config` of the current fake session (modules imported it once, by name)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(Session.world.user_config, name)


USER_CONFIG = CurrentUserConfig()
