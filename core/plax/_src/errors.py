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
    """A traced (abstract) value was used where Python needs a concrete one: as a
    shape, a Python int or float, a loop bound, a static argument...

    Inside a transformation, values computed from the function's arguments are
    tracers whose values are unknown until the compiled program runs. Make the
    value static (`static_argnums`), compute it from shapes (`x.shape[0]`,
    which are concrete), or restructure with `lax` control flow. Its subclass
    `TracerBoolConversionError` covers `bool()` conversions.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.jit(lambda n: jnp.zeros(int(n)))(3)
        Traceback (most recent call last):
        ...
        plax.errors.ConcretizationTypeError: Abstract tracer value encountered...
        >>> plax.jit(lambda n: jnp.zeros(n), static_argnums=0)(3)  # n static: a Python int
        Array([0., 0., 0.], dtype=float32)
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """A traced value was converted to a Python bool, typically by `if`, `while`,
    `and`/`or` or `assert` on an array inside `jit` (or `vmap`, `grad`...).

    While a function is traced its arrays are abstract: only their shapes and
    dtypes are known, so Python cannot decide which branch to take. Fixes:
    compute both sides and pick with `jnp.where`/`lax.select`; use
    `lax.cond`/`lax.while_loop` for control flow that depends on values; or, if
    the value is really a configuration constant, mark the argument static
    (`jit(f, static_argnums=...)`).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> @plax.jit
        ... def relu(x):
        ...     if x > 0:
        ...         return x
        ...     return 0.0
        >>> relu(1.0)
        Traceback (most recent call last):
        ...
        plax.errors.TracerBoolConversionError: Attempted boolean conversion of a traced array...
        >>> plax.jit(lambda x: jnp.where(x > 0, x, 0.0))(1.0)  # the fix
        Array(1., dtype=float32, weak_type=True)
    """


class TracerIntegerConversionError(JAXTypeError):
    """A traced value was used as a Python integer index (`__index__`): to index a
    list or tuple, as a `range` bound, or as a shape.

    Python containers cannot be indexed by a value unknown at trace time. Index
    an array instead (`jnp.stack(items)[i]`, or `lax.dynamic_index_in_dim`), use
    `lax.switch` to choose among functions, or make the index static.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> weights = [1.0, 2.0, 3.0]
        >>> plax.jit(lambda i: weights[i])(1)
        Traceback (most recent call last):
        ...
        plax.errors.TracerIntegerConversionError: The __index__() method was called...
        >>> plax.jit(lambda i: jnp.array(weights)[i])(1)  # the fix
        Array(2., dtype=float32)
    """


class TracerArrayConversionError(JAXTypeError):
    """A traced value was converted to a NumPy array (`np.asarray(x)`, a NumPy
    function called on it, `x.tolist()`...) inside a transformation.

    NumPy computes eagerly on concrete data, which a tracer does not have. Use
    the `plax.numpy` function instead, or move the NumPy code outside the
    transformed function (or into `plax.pure_callback`).

    Examples:
        >>> import numpy as np
        >>> import plax, plax.numpy as jnp
        >>> plax.jit(lambda x: np.sin(np.asarray(x)))(1.0)
        Traceback (most recent call last):
        ...
        plax.errors.TracerArrayConversionError: The numpy.ndarray conversion method...
        >>> plax.jit(lambda x: jnp.sin(x))(0.0)  # the fix
        Array(0., dtype=float32, weak_type=True)
    """


class NonConcreteBooleanIndexError(JAXIndexError):
    """`x[mask]` with a traced boolean mask: the result's shape would depend on values."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it and was used later.

    This happens when a traced function stores an intermediate value outside
    itself (in a global, a list, an attribute of `self`) and the value is used
    after the trace has ended. Return values instead of storing them; the
    `jax_check_tracer_leaks` option (`plax.checking_leaks()`) reports the leak
    where it happens.

    Examples:
        >>> import plax
        >>> saved = []
        >>> @plax.jit
        ... def f(x):
        ...     saved.append(x)  # the tracer leaks out of the trace
        ...     return x
        >>> _ = f(1.0)
        >>> saved[0] + 1
        Traceback (most recent call last):
        ...
        plax.errors.UnexpectedTracerError: Encountered an unexpected tracer...
    """


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
