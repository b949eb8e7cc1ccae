"""Exceptions users meet while tracing, with JAX's names and class hierarchy.

Every message ends with a pointer to the section of the plax errors page
(`docs/errors.md` in the repository) that explains the error and its fixes, so
that users and tools searching for the class name find the fix.
"""
from __future__ import annotations

ERRORS_PAGE = "docs/errors.md"


def errors_page_pointer(cls: type) -> str:
    """The closing line of a message of `cls`: where its fixes are explained."""
    return f"See {ERRORS_PAGE}#{cls.__name__.lower()} in plax for what causes it and the fixes."


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
