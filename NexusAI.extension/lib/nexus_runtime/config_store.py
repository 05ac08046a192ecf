"""Settings kept in pyRevit's user config (section [NexusAI] of pyRevit_config.ini). Revit-facing."""
from pyrevit.userconfig import user_config

from nexus_runtime.settings import DEFAULTS, Settings

SECTION = "NexusAI"


class PyRevitSettingsStore(object):
    def load(self):
        section = _section()
        return Settings.from_mapping(dict((key, section.get_option(key, default)) for key, default in DEFAULTS.items()))

    def save(self, settings):
        section = _section()
        for key, value in settings.to_mapping().items():
            section.set_option(key, value)
        user_config.save_changes()


def _section():
    try:
        return user_config.get_section(SECTION)
    except AttributeError:
        return user_config.add_section(SECTION)
