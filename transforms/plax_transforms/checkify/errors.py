"""What checkify reports: the categories of error, the error state a checkified
function threads through its computation, and the `Error` value it returns.

The state holds one slot per *kind* of error (a category and the shapes of the
values its message shows): whether an error of that kind happened, the code of the
check site that first raised it, and that site's values. Codes number the sites in
the order they were traced; `Error.get` reports the failing kind with the lowest
code, as JAX does. What each code means (its message) stays in Python, in `sites`.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from plax.extend import tree_util
from plax_stdlib import numpy as jnp


class JaxRuntimeError(ValueError):
    """A check failed: raised by `Error.throw`, and by `check` outside `checkify`."""


class JaxException(Exception):
    """Base of the error categories `checkify(errors=...)` selects."""


class FailedCheckError(JaxException):
    """A user's `check` failed."""


class NaNError(JaxException):
    """An operation produced a NaN."""


class DivisionByZeroError(JaxException):
    """A division by zero."""


class OOBError(JaxException):
    """An index out of bounds."""


class BatchedError(JaxException):
    """Errors of a vmapped checkified function, per mapped index."""


ErrorCategory = type[JaxException]
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
div_checks = frozenset({DivisionByZeroError})
index_checks = frozenset({OOBError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Kind(NamedTuple):
    """One slot of the error state: a category and its payload's (shape, dtype)s."""
    category: ErrorCategory
    payload: tuple[tuple[tuple[int, ...], str], ...] = ()

    def sort_key(self):
        return self.category.__name__, self.payload


class Site(NamedTuple):
    """A place that can raise an error: its category and how to word its message
    from the payload values."""
    category: ErrorCategory
    describe: Callable[[Sequence[np.ndarray]], str]


_codes = itertools.count(1)


def new_code() -> int:
    return next(_codes)


OOB_KIND = Kind(OOBError, (((3,), "int32"),))


def payload_kind(category: ErrorCategory, values: Sequence[Any]) -> Kind:
    from plax.extend.core import get_aval
    avals = [get_aval(v) for v in values]
    return Kind(category, tuple((tuple(a.shape), np.dtype(a.dtype).name) for a in avals))


# --- the state: per kind, (failed, code, payload) ----------------------------------------

def initial_state(kinds: Sequence[Kind]) -> list:
    return [(np.bool_(False), np.int32(-1),
             tuple(np.zeros(shape, dtype) for shape, dtype in kind.payload)) for kind in kinds]


def record(state: list, slot: int, failed, code, payload: Sequence[Any]) -> list:
    """`state` with slot `slot` set to (code, payload) where it had no error yet and
    `failed` holds."""
    before, old_code, old_payload = state[slot]
    new = list(state)
    new[slot] = (jnp.logical_or(before, failed),
                 jnp.where(before, old_code, jnp.asarray(code, np.int32)),
                 tuple(jnp.where(before, o, jnp.asarray(n).astype(o.dtype))
                       for o, n in zip(old_payload, payload)))
    return new


# --- the value checkify returns ---------------------------------------------------------

class Error:
    """The errors a checkified function found. `get()` is the message of the first
    (None if none), `throw()` raises it as a `JaxRuntimeError`. Under `vmap`, the
    message lists the failing mapped indices."""

    def __init__(self, kinds: Sequence[Kind], state: Sequence, sites: dict[int, Site]):
        self._kinds = tuple(kinds)
        self._state = tuple(state)
        self._sites = dict(sites)

    def _messages(self) -> list[tuple[tuple[int, ...], ErrorCategory, str]]:
        """(mapped index, category, message) of each failing index."""
        if not self._kinds:
            return []
        preds = [np.asarray(s[0]) for s in self._state]
        codes = [np.asarray(s[1]) for s in self._state]
        found = []
        for index in np.ndindex(*preds[0].shape):
            failing = [(codes[k][index], k) for k in range(len(preds)) if preds[k][index]]
            if failing:
                code, k = min(failing)
                site = self._sites[int(code)]
                payload = [np.asarray(p)[index] for p in self._state[k][2]]
                found.append((index, site.category, site.describe(payload)))
        return found

    def get(self) -> str | None:
        exception = self.get_exception()
        return None if exception is None else str(exception)

    def get_exception(self) -> JaxException | None:
        found = self._messages()
        if not found:
            return None
        if found[0][0] == ():
            return found[0][1](found[0][2])
        return BatchedError("\n".join(f"at mapped index {', '.join(map(str, index))}: {msg}"
                                      for index, _, msg in found))

    def throw(self) -> None:
        message = self.get()
        if message is not None:
            raise JaxRuntimeError(message)

    def __str__(self):
        return f"Error({self.get()})"

    __repr__ = __str__


def _flatten(error: Error):
    return list(error._state), (error._kinds, tuple(sorted(error._sites.items())))


def _unflatten(aux, children):
    kinds, sites = aux
    return Error(kinds, children, dict(sites))


tree_util.register_pytree_node(Error, _flatten, _unflatten)

init_error = Error((), (), {})
