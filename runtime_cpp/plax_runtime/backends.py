"""The backend registry: which PJRT clients exist, and in what order.

Packages join through the `plax.backends` entry point group; each entry point is a
`BackendPlugin`. Clients are made lazily, once, on first use. The `jax_platforms`
option (env `PLAX_PLATFORMS` / `JAX_PLATFORMS`) lists the platforms to start, in
priority order; without it every installed backend is tried, highest priority
first, and one whose client cannot be made is reported with a warning and skipped.
An explicitly requested platform that is missing or broken is an error naming the
package to install.
"""
from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jaxlib import _jax, xla_client as xc

from plax.extend import config, registry as plugins

GROUP = "plax.backends"
logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class BackendPlugin:
    """What a package announces in the `plax.backends` entry point group.

    `platform` is the canonical name (`cpu`, `cuda`, `tpu`); `aliases` are other
    names users may ask for (`gpu`). `package` is the distribution to install or
    fix, named in errors. `make_client()` builds the jaxlib `Client`; it is called
    at most once per process. `make_topology(name, **options)`, where the runtime
    can describe devices it is not attached to, gives a jaxlib `DeviceTopology` for
    ahead-of-time compilation (`plax.experimental.topologies`).
    """
    platform: str
    make_client: Callable[[], xc.Client]
    priority: int = 0
    package: str = "plax-runtime"
    aliases: tuple[str, ...] = ()
    make_topology: Callable[..., Any] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.platform, *self.aliases)


class BackendWarning(RuntimeWarning):
    """An installed backend could not start and was skipped."""


class BackendUnavailableError(RuntimeError):
    """A plugin's runtime (its PJRT library) is not installed on this machine.

    Unlike other failures this is an ordinary configuration (a plugin package without
    its `[runtime]` extra), so the registry skips the backend quietly unless it was
    requested.
    """


def _release_deferred_python_objects(*_) -> None:
    """jaxlib defers the release of Python objects dropped where the GIL was not held
    (the tracebacks of finished asynchronous executions): they wait in a queue that
    only `collect_garbage` empties. Emptied at every garbage collection, they cannot
    pile up (JAX registers the same hook when it is imported)."""
    _jax.collect_garbage()


gc.callbacks.append(_release_deferred_python_objects)

_lock = threading.Lock()
_clients: dict[str, xc.Client] | None = None  # platform → client, default first
_start_failures: dict[str, str] = {}  # platform → why its client was not made


def requested_platforms() -> list[str] | None:
    """The platforms named by `jax_platforms`, in order, or None if unset."""
    text = config.platforms.value
    if not text:
        return None
    return [name.strip().lower() for name in text.split(",") if name.strip()]


def installed_plugins() -> dict[str, BackendPlugin]:
    """Every loadable backend plugin, by entry point name (failures are warned about)."""
    found = {}
    for name, obj in plugins.load_group(GROUP).items():
        if isinstance(obj, BackendPlugin):
            found[name] = obj
        else:
            warnings.warn(f"entry point {name!r} of group {GROUP!r} names a "
                          f"{type(obj).__name__}, not a BackendPlugin; it is skipped",
                          BackendWarning, stacklevel=2)
    return found


def _plugins_by_name(available: Mapping[str, BackendPlugin]) -> dict[str, BackendPlugin]:
    """Each name a plugin answers to (its platform and aliases, lowercase) -> it."""
    return {name: p for p in available.values() for name in p.names}


def make_clients(available: Mapping[str, BackendPlugin], requested: Sequence[str] | None
                 ) -> tuple[dict[str, xc.Client], dict[str, str]]:
    """Start the backends: all of `available`, or exactly the `requested` ones.

    Returns platform → client with the default backend first, and platform → reason
    for the backends that were skipped because their client could not be made.
    """
    by_name = _plugins_by_name(available)
    if requested is None:
        chosen = sorted(available.values(), key=lambda p: -p.priority)
    else:
        chosen = [_requested_plugin(name, by_name) for name in requested]
    clients: dict[str, xc.Client] = {}
    failures: dict[str, str] = {}
    for plugin in chosen:
        if plugin.platform in clients:
            continue
        try:
            clients[plugin.platform] = plugin.make_client()
        except Exception as err:
            message = (f"Unable to initialize backend {plugin.platform!r} (from "
                       f"{plugin.package}): {type(err).__name__}: {err}")
            if requested is not None:
                raise RuntimeError(message) from err
            failures[plugin.platform] = message
            if isinstance(err, BackendUnavailableError):
                logger.info(message)
            else:
                warnings.warn(message, BackendWarning, stacklevel=3)
    if not clients:
        failed = "".join(f"\n  {msg}" for msg in plugins.failures(GROUP).values())
        raise RuntimeError("No plax backend could be started; plax-runtime provides the "
                           "CPU backend" + failed)
    return clients, failures


def _requested_plugin(name: str, by_name: Mapping[str, BackendPlugin]) -> BackendPlugin:
    plugin = by_name.get(name)
    if plugin is None:
        raise RuntimeError(f"Backend {name!r} was requested by jax_platforms (PLAX_PLATFORMS/"
                           f"JAX_PLATFORMS) but is not available: "
                           f"{_why_missing(name, by_name)}")
    return plugin


def _why_missing(name: str, installed: Mapping[str, BackendPlugin]) -> str:
    """Names the package to install, or says why an installed backend did not start."""
    if name in installed:
        return _start_failures.get(installed[name].platform,
                                   "jax_platforms (PLAX_PLATFORMS/JAX_PLATFORMS) left it out")
    try:
        plugin = plugins.resolve(GROUP, name)
    except plugins.PluginMissingError as err:
        return str(err)
    return f"{getattr(plugin, 'package', name)} is installed but was not loaded"


def backends_are_initialized() -> bool:
    """Whether the backends' clients have been made (after which the set of processes
    and devices is fixed)."""
    return _clients is not None


def clients() -> dict[str, xc.Client]:
    """platform → client for every started backend, the default one first."""
    global _clients
    if _clients is None:
        with _lock:
            if _clients is None:
                started, failed = make_clients(installed_plugins(), requested_platforms())
                _start_failures.update(failed)
                _clients = started
    return _clients


def made_clients() -> list[xc.Client]:
    """The backends' clients made so far (none before the first use)."""
    return list((_clients or {}).values())


def get_backend(platform: str | xc.Client | None = None) -> xc.Client:
    """The client of `platform` (a name or alias), or the default backend's: the one
    `jax_platform_name` names, else the first started."""
    if isinstance(platform, xc.Client):
        return platform
    started = clients()
    platform = platform or config.platform_name.value or None
    if platform is None:
        return next(iter(started.values()))
    if not isinstance(platform, str):
        raise TypeError(f"backend must be a platform name or a Client, got {platform!r}")
    name = platform.lower()
    client = started.get(name)
    if client is not None:
        return client
    by_name = _plugins_by_name(installed_plugins())
    plugin = by_name.get(name)
    if plugin is not None and plugin.platform in started:
        return started[plugin.platform]
    # JAX's two openings ("Unknown backend", "failed to initialize"), which libraries
    # match, then why.
    opening = (f"Unknown backend {platform!r}" if plugin is None
               else f"Backend {platform!r} failed to initialize")
    raise RuntimeError(f"{opening}: {_why_missing(name, by_name)}; "
                       f"started backends: {list(started)}")


def make_topology(platform: str, topology_name: str = "", **options) -> Any:
    """A jaxlib `DeviceTopology` of `platform` from its plugin's `make_topology`, for
    compiling ahead of time for devices this process is not attached to."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be a platform name, got {platform!r}")
    name = platform.lower()
    by_name = _plugins_by_name(installed_plugins())
    plugin = by_name.get(name)
    if plugin is None:
        raise RuntimeError(f"Backend {platform!r} is not installed, so it has no topology: "
                           f"{_why_missing(name, by_name)}")
    if plugin.make_topology is None:
        raise NotImplementedError(f"topology not implemented for {platform}")
    return plugin.make_topology(topology_name, **options)
