"""Every cache of traces, lowerings and executables, so that `plax.clear_caches()`
empties them all.

Packages register each cache when they make it: a module-level cache by the
function that empties it (`register_cache(cache.clear)`), an object that owns caches
(a jitted function) by itself, held weakly, and emptied by its `clear_cache()`.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

_lock = threading.Lock()
_clearers: list[Callable[[], Any]] = []
_owners: weakref.WeakSet = weakref.WeakSet()


def register_cache(clear: Callable[[], Any]) -> None:
    """Adds `clear` (emptying a module-level cache) to what `clear_caches` calls."""
    if not callable(clear):
        raise TypeError(f"register_cache takes the function that empties a cache, got "
                        f"{clear!r}")
    with _lock:
        _clearers.append(clear)


def register_cache_owner(owner: Any) -> None:
    """Adds an object whose `clear_cache()` `clear_caches` calls, while it lives."""
    with _lock:
        _owners.add(owner)


def clear_caches() -> None:
    """Empties every compilation and staging cache.

    Traced Jaxprs, lowered modules and compiled executables are forgotten, so
    the next call of each jitted function traces and compiles again; arrays and
    devices are not affected. Useful to free host memory held by many compiled
    programs, or in tests that count compilations.

    Examples:
        >>> import plax
        >>> plax.clear_caches()
    """
    with _lock:
        clearers, owners = list(_clearers), list(_owners)
    for clear in clearers:
        clear()
    for owner in owners:
        owner.clear_cache()
