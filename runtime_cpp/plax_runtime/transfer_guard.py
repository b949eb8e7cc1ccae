"""The transfer guard: logging or refusing data movement the user did not ask for.

Each direction (host-to-device, device-to-device, device-to-host) has a level, from
plax's options `jax_transfer_guard_*` (`with plax.transfer_guard("disallow"):`):
'allow'; 'log' and 'disallow' log or refuse *implicit* transfers (a NumPy argument of
a computation, `print(array)`); 'log_explicit' and 'disallow_explicit' do so for
explicit ones too (`device_put`, `device_get`). A refused transfer raises JAX's
`JaxRuntimeError`; a logged one is a warning of the `plax.transfer_guard` logger.
As in JAX, reading a CPU array is no transfer (its buffer is host memory).

plax checks its transfers here, by its own options, and keeps jaxlib's guard out of
them. jaxlib's guard is state that JAX sets (globally, and per thread), and jaxlib
applies it inside its transfer functions; so while JAX is loaded, plax calls those
functions with jaxlib's thread-local levels pinned to 'allow' and restores them
right after (`unguarded`). Neither library's settings reach the other's transfers,
and plax never writes jaxlib's process-wide guard state.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
from typing import Any, Callable, Iterator

from jaxlib import _jax

from plax.extend import config

logger = logging.getLogger("plax.transfer_guard")

_LEVELS = {"host_to_device": config.transfer_guard_host_to_device,
           "device_to_device": config.transfer_guard_device_to_device,
           "device_to_host": config.transfer_guard_device_to_host}
_REFUSED = {False: ("disallow", "disallow_explicit"), True: ("disallow_explicit",)}
_LOGGED = {False: ("log", "log_explicit"), True: ("log_explicit",)}

_EXPLICIT, _INTERNAL = "explicit", "internal"
_scope = threading.local()  # .kind: None (implicit), _EXPLICIT or _INTERNAL


@contextlib.contextmanager
def _scoped(kind: str) -> Iterator[None]:
    previous = getattr(_scope, "kind", None)
    _scope.kind = kind
    try:
        yield
    finally:
        _scope.kind = previous


def explicit() -> contextlib.AbstractContextManager:
    """Transfers inside are explicit: the user asked for them (`device_put`, `device_get`)."""
    return _scoped(_EXPLICIT)


def internal() -> contextlib.AbstractContextManager:
    """Transfers inside are plax's own (a computation's constants, the second leg of
    a move through the host) and are not guarded."""
    return _scoped(_INTERNAL)


def level_state(direction: str) -> config.State:
    """The config state holding the level of `direction` (for C++ callers)."""
    return _LEVELS[direction]


def active(direction: str) -> bool:
    """Whether transfers in `direction` may be logged or refused (the level is not
    'allow'): shortcuts that skip a transfer must then take the checked path."""
    level = _LEVELS[direction].value
    return level is not None and level != "allow"


def check(direction: str, aval: Any, sharding: Any = None, dst_sharding: Any = None) -> None:
    """Logs or refuses a transfer of `aval` in `direction` as its level says."""
    level = _LEVELS[direction].value
    if level is None or level == "allow":
        return
    kind = getattr(_scope, "kind", None)
    if kind == _INTERNAL:
        return
    is_explicit = kind == _EXPLICIT
    if level in _REFUSED[is_explicit]:
        what = _describe(direction, aval, sharding, dst_sharding)
        raise _jax.JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {what}")
    if level in _LOGGED[is_explicit]:
        logger.warning("%s", _describe(direction, aval, sharding, dst_sharding))


def _describe(direction: str, aval, sharding, dst_sharding) -> str:
    parts = [f"aval={aval!r}"]
    if sharding is not None:
        parts.append(f"sharding={sharding!r}")
    if dst_sharding is not None:
        parts.append(f"dst_sharding={dst_sharding!r}")
    return f"{direction.replace('_', '-')} transfer: " + ", ".join(parts)


_guard_lib = _jax.guard_lib
_ALLOW = _guard_lib.TransferGuardLevel.ALLOW


def unguarded(fn: Callable, *args, **kwargs):
    """`fn(*args, **kwargs)`, a jaxlib transfer function, with jaxlib's own guard kept
    out of it (pinned to 'allow' in this thread while JAX, which sets it, is loaded)."""
    if "jax" not in sys.modules:  # only JAX sets jaxlib's guard state
        return fn(*args, **kwargs)
    state = _guard_lib.thread_local_state()
    saved = state.host_to_device, state.device_to_device, state.device_to_host
    state.host_to_device = state.device_to_device = state.device_to_host = _ALLOW
    try:
        return fn(*args, **kwargs)
    finally:
        state.host_to_device, state.device_to_device, state.device_to_host = saved
