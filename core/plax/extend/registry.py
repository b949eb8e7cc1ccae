"""The plugin registry for package authors: entry-point groups, resolving what a
group provides, names contributed to shared public modules, and what failed to load."""
from plax._src.plugins import (GROUPS, SEAMS, PluginMissingError, PluginVersionError,
                               PluginWarning, check_version, contributed, contributed_names,
                               failures, load_group, names, resolve)

__all__ = ["GROUPS", "SEAMS", "PluginMissingError", "PluginVersionError", "PluginWarning",
           "check_version", "contributed", "contributed_names", "failures", "load_group",
           "names", "resolve"]
