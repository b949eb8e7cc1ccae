"""Side effects still under way, and `effects_barrier`, which waits for them.

A computation with side effects (a host callback, a print) may still be running
after it returned its results: dispatch is asynchronous. Whoever launches one
registers what to wait for here: for an *ordered* effect, the token its run
produced on a device (the next run of that effect there consumes it, so runs keep
their order); for any effectful run, its output token per device. Anything with a
`block_until_ready()` method serves (jaxlib's tokens and futures, plax Arrays).
`effects_barrier()` blocks on all of them.
"""
from __future__ import annotations

import threading
from typing import Any, Hashable, Protocol


class Waitable(Protocol):
    def block_until_ready(self) -> Any: ...


class RuntimeTokens:
    """The latest token of each (ordered effect, device), and the latest output token
    of effectful runs on each device."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ordered: dict[tuple[Hashable, Any], Waitable] = {}
        self._outputs: dict[Any, Waitable] = {}

    def get_token(self, effect: Hashable, device: Any) -> Waitable | None:
        """The token the last run of ordered `effect` on `device` left, or None."""
        with self._lock:
            return self._ordered.get((effect, device))

    def set_token(self, effect: Hashable, device: Any, token: Waitable) -> None:
        with self._lock:
            self._ordered[(effect, device)] = token

    def set_output_token(self, device: Any, token: Waitable) -> None:
        """Records that an effectful run on `device` finishes when `token` is ready
        (runs on one device complete in order, so the latest one suffices)."""
        with self._lock:
            self._outputs[device] = token

    def block_until_ready(self) -> None:
        with self._lock:
            waiting = [*self._ordered.values(), *self._outputs.values()]
            self._outputs.clear()
        for token in waiting:
            token.block_until_ready()

    def clear(self) -> None:
        """Forget every token (after the backends they live on are gone)."""
        with self._lock:
            self._ordered.clear()
            self._outputs.clear()


runtime_tokens = RuntimeTokens()


def effects_barrier() -> None:
    """Waits until every computation launched so far has finished its side effects.

    Side effects are those of `plax.debug.print`, `io_callback` and other
    effectful operations, which run asynchronously; call this before reading
    what they produced (for example, printed output in a test).

    Examples:
        >>> import plax
        >>> plax.jit(lambda x: plax.debug.print("x = {}", x))(1)
        x = 1
        >>> plax.effects_barrier()  # on an asynchronous backend, waits for the print
    """
    runtime_tokens.block_until_ready()
