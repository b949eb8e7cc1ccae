"""The thread guard: multi-process computations may start from one thread only.

Every process of a multi-process program must start its collective computations in
the same order; threads that each start some make that order differ between
processes (a deadlock, or a crash). `with plax.thread_guard(True):` records the
thread that entered it as the owner, for the whole process; running a computation
whose devices span several processes from any other thread then raises JAX's
`JaxRuntimeError` (FAILED_PRECONDITION). Single-process computations are never
checked. Leaving the block, or setting the option to False in any thread, clears
the owner; a second thread setting it while one owns it is an error, as in JAX.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

from jaxlib import _jax

from plax.extend import config

_lock = threading.Lock()
_owner: int | None = None  # the thread that set the guard


def _follow(enabled: bool | None) -> None:
    """The option's hook: owner = this thread while the guard is on."""
    global _owner
    me = threading.get_ident()
    with _lock:
        if not enabled:
            _owner = None
        elif _owner is None:
            _owner = me
        elif _owner != me:
            raise _jax.JaxRuntimeError(
                "FAILED_PRECONDITION: The thread guard's global thread ID is already set "
                f"(by thread {_owner}). Nested thread guards in different threads are not "
                "supported.")


config.thread_guard.add_update_hook(_follow)


def spans_processes(devices: Iterable) -> bool:
    """Whether `devices` belong to more than one process (what the guard watches)."""
    return len({d.process_index for d in devices}) > 1


def check() -> None:
    """Raises if the guard is set and this is not the thread that set it."""
    owner = _owner
    if owner is not None and owner != threading.get_ident():
        raise _jax.JaxRuntimeError(
            f"FAILED_PRECONDITION: A multi-process plax operation was called from thread "
            f"{threading.get_ident()}. This is not allowed because the thread guard was set "
            f"in thread {owner}.")
