"""The plugin registry: how packages join plax through entry points.

Four groups (DESIGN.md §3): `plax.transforms` (names the facade `plax.<name>`
resolves), `plax.primitives` (modules that define primitives), `plax.lowering`
(modules that register lowering rules) and `plax.backends` (PJRT backends). Each
group is read lazily, once. A plugin that fails to load is reported with a warning
and skipped; it never takes the other plugins down.
"""
from __future__ import annotations

import importlib.metadata as metadata
import threading
import warnings
from typing import Any

GROUPS = ("plax.transforms", "plax.primitives", "plax.lowering", "plax.backends")

# Which distribution provides what, for errors that tell the user what to install.
_PROVIDERS = {
    "plax.transforms": "plax-transforms",
    "plax.lowering": "plax-transforms",
    "plax.backends": "plax-runtime",
}
_BACKEND_PROVIDERS = {"cpu": "plax-runtime", "cuda": "plax-cuda12", "gpu": "plax-cuda12",
                      "tpu": "plax-tpu"}


class PluginMissingError(ImportError):
    """A name or backend is provided by a package that is not installed."""


class PluginWarning(RuntimeWarning):
    """A plugin failed to load and was skipped."""


class _Group:
    """One entry-point group: its entry points by name, each loaded on first use."""

    def __init__(self, name: str):
        self.name = name
        self.entry_points = {ep.name: ep for ep in metadata.entry_points(group=name)}
        self.loaded: dict[str, Any] = {}
        self.failures: dict[str, str] = {}

    def load(self, ep_name: str) -> Any:
        if ep_name in self.loaded:
            return self.loaded[ep_name]
        if ep_name in self.failures:
            raise PluginMissingError(self.failures[ep_name])
        ep = self.entry_points[ep_name]
        try:
            obj = ep.load()
        except Exception as err:  # a broken plugin must not take the others down
            dist = ep.dist.name if ep.dist else "an unknown distribution"
            msg = (f"plax plugin {ep.name!r} ({ep.value}) from {dist} failed to load: "
                   f"{type(err).__name__}: {err}")
            self.failures[ep_name] = msg
            warnings.warn(msg, PluginWarning, stacklevel=3)
            raise PluginMissingError(msg) from err
        self.loaded[ep_name] = obj
        return obj

    def load_all(self) -> dict[str, Any]:
        for ep_name in self.entry_points:
            try:
                self.load(ep_name)
            except PluginMissingError:
                pass
        return dict(self.loaded)


_groups: dict[str, _Group] = {}
_lock = threading.RLock()


def _group(name: str) -> _Group:
    with _lock:
        group = _groups.get(name)
        if group is None:
            group = _groups[name] = _Group(name)
        return group


def names(group: str) -> list[str]:
    """Entry point names announced in `group` (nothing is imported)."""
    return sorted(_group(group).entry_points)


def resolve(group: str, name: str) -> Any:
    """The object the entry point `name` of `group` refers to, loading it once."""
    with _lock:
        g = _group(group)
        if name not in g.entry_points:
            provider = (_BACKEND_PROVIDERS.get(name) if group == "plax.backends"
                        else _PROVIDERS.get(group))
            hint = f"; install {provider!r}" if provider else ""
            raise PluginMissingError(
                f"no plugin provides {name!r} in entry point group {group!r}{hint}")
        return g.load(name)


def load_group(group: str) -> dict[str, Any]:
    """Load every plugin of `group` (failures are warned about and skipped)."""
    with _lock:
        return _group(group).load_all()


def failures(group: str) -> dict[str, str]:
    """Plugins of `group` that failed to load, with the reason."""
    return dict(_group(group).failures)


def ensure_primitives_loaded() -> None:
    """Import every module announced in `plax.primitives` and `plax.lowering` once."""
    load_group("plax.primitives")
    load_group("plax.lowering")


def lazy_attributes(module_name: str, provided: tuple[str, ...]):
    """A module `__getattr__` that resolves `provided` names through `plax.transforms`,
    for public core modules whose functions live in other packages."""
    def __getattr__(name: str):
        if name in provided:
            return resolve("plax.transforms", name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return __getattr__


def _reset_for_tests() -> None:
    with _lock:
        _groups.clear()
