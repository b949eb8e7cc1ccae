"""`convolve` and `correlate` of 1-D arrays, as one `lax.conv_general_dilated`."""
from __future__ import annotations

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import util

_MODES = ("full", "same", "valid")


def _conv1d(name: str, a, v, mode: str, precision, preferred_element_type):
    util.check_arraylike(name, a, v)
    a, v = util.operand(a), util.operand(v)
    if len(util.shape_of(a)) != 1 or len(util.shape_of(v)) != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    preferred = util.check_user_dtype(preferred_element_type, name)
    # NumPy computes convolutions in floating point unless told otherwise.
    a, v = (util.promote_dtypes_inexact(a, v) if preferred is None
            else util.promote_dtypes(a, v))
    if util.shape_of(a)[0] == 0 or util.shape_of(v)[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {util.shape_of(a)} and "
                         f"{util.shape_of(v)}.")
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}")
    reverse = False
    if name == "correlate":
        v = lax.conj(v) if util.dtype_category(util.dtype_of(v)) == "c" else v
        if util.shape_of(a)[0] < util.shape_of(v)[0]:
            a, v, reverse = v, a, True
    else:
        if util.shape_of(a)[0] < util.shape_of(v)[0]:
            a, v = v, a
        v = lax.rev(v, (0,))
    k = util.shape_of(v)[0]
    padding = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}[mode]
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, util.shape_of(a)[0])),
                                   lax.reshape(v, (1, 1, k)), (1,), [padding],
                                   precision=precision, preferred_element_type=preferred)
    out = lax.reshape(out, util.shape_of(out)[2:])
    return lax.rev(out, (0,)) if reverse else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of the 1-D arrays `a` and `v`:
    `out[k] = sum_n a[n] * v[k - n]`.

    Follows `numpy.convolve` (modes "full", "same", "valid"), plus JAX's `precision`
    and `preferred_element_type`. Computed with XLA's convolution, so on accelerators
    float32 inputs may use reduced precision by default.

    Args:
        a: a 1-D array.
        v: a 1-D array.
        mode: "full" (every overlap), "same" (`a`'s length) or "valid" (full overlaps
            only).
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        A 1-D array.

    Raises:
        ValueError: inputs that are not 1-D, empty, or an unknown mode.

    Examples:
        >>> jnp.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
        Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
        >>> jnp.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0]), mode="valid")
        Array([3., 5.], dtype=float32)
    """
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of the 1-D arrays `a` and `v`:
    `out[k] = sum_n a[n + k] * conj(v[n])`.

    Follows `numpy.correlate` (modes "valid" by default, "same", "full"), plus
    `precision` and `preferred_element_type` (see `convolve`).

    Args:
        a: a 1-D array.
        v: a 1-D array.
        mode: "valid", "same" or "full".
        precision: None, a `lax.Precision`, or a pair of them.
        preferred_element_type: the dtype to accumulate in and return.

    Returns:
        A 1-D array.

    Raises:
        ValueError: inputs that are not 1-D, empty, or an unknown mode.

    Examples:
        >>> jnp.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0]), mode="full")
        Array([1., 2., 3., 0.], dtype=float32)
    """
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


jax_jits.apply(globals())  # JAX's jitted functions become jit functions
