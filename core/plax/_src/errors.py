"""Exceptions users meet while tracing, with JAX's names and class hierarchy.

Every message ends with a pointer to the entry of the errors reference that explains
the error and its fixes. The reference, `errors.md`, ships inside the `plax` package,
so `python -m plax.errors NAME` prints the entry wherever plax is installed (the
documentation site renders the same file).
"""
from __future__ import annotations

import importlib.resources
import re


def errors_page_pointer(cls: type | str) -> str:
    """The closing line of a message of `cls` (or of the entry named so): where its
    fixes are explained."""
    name = cls if isinstance(cls, str) else cls.__name__
    return f"Run `python -m plax.errors {name}` for what causes it and the fixes."


def reference_text() -> str:
    """The errors reference, `errors.md` of the installed plax package."""
    return (importlib.resources.files("plax") / "errors.md").read_text(encoding="utf-8")


def reference_entries() -> dict[str, str]:
    """The reference's entries, `{anchor: text}`: one per `## anchor` section."""
    sections = re.split(r"^## ", reference_text(), flags=re.MULTILINE)[1:]
    return {s.split("\n", 1)[0].strip(): "## " + s.rstrip() for s in sections}


def reference_entry(name: str) -> str:
    """The entry for an error class or anchor (`TracerBoolConversionError`,
    `buffer-donation`); KeyError naming the entries there are for any other name."""
    entries = reference_entries()
    key = name.strip().lower()
    if key not in entries:
        raise KeyError(f"no entry {name!r} in the plax errors reference; entries: "
                       f"{', '.join(e for e in entries if ' ' not in e)}")
    return entries[key]


class _PlaxErrorMixin:
    """Adds the errors-page pointer to the message, once."""

    def __init__(self, message: str = ""):
        pointer = errors_page_pointer(type(self))
        super().__init__(message if pointer in message else f"{message}\n\n{pointer}")


class JAXTypeError(_PlaxErrorMixin, TypeError):
    """Base of the tracing errors that are TypeErrors (JAX's `jax.errors.JAXTypeError`)."""


class JAXIndexError(_PlaxErrorMixin, IndexError):
    """Base of the tracing errors that are IndexErrors (JAX's `jax.errors.JAXIndexError`)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool(tracer)`, e.g. `if x > 0:` on a traced `x`."""


class TracerIntegerConversionError(JAXTypeError):
    """`tracer.__index__()`: a tracer used as an index into a Python sequence, a range
    bound, a shape."""


class TracerArrayConversionError(JAXTypeError):
    """`np.asarray(tracer)`: the value does not exist while tracing."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """`x[mask]` with a traced boolean mask: the result's shape would depend on values."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used outside the transformation that created it."""


class KeyReuseError(JAXTypeError):
    """A typed PRNG key was consumed twice while `jax_debug_key_reuse` is on."""


class DistributedError(_PlaxErrorMixin, RuntimeError):
    """A multi-process run that cannot go on: a peer died, stopped or did not arrive at
    a multi-process operation in time (plax's own; JAX aborts or waits forever)."""


class ShardingTypeError(TypeError):
    """Operands whose shardings in their types conflict, or an operation whose
    result sharding is ambiguous (JAX's `ShardingTypeError`)."""


class InvalidShapeError(ValueError, TypeError):
    """A shape with a negative dimension, or too large for a 64-bit size.

    Both a ValueError (NumPy's class for bad shapes) and a TypeError (the class JAX's
    shape rules raise), so `except` clauses written for either keep working.
    """


for _cls in (JAXTypeError, JAXIndexError, ConcretizationTypeError, TracerBoolConversionError,
             TracerIntegerConversionError, TracerArrayConversionError,
             NonConcreteBooleanIndexError, UnexpectedTracerError, InvalidShapeError,
             KeyReuseError, DistributedError):
    _cls.__module__ = "plax.errors"  # where users find them
del _cls
