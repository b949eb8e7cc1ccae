"""The public functions of plax that are `plax.jit` functions, as in JAX, and how.

JAX 0.10.2 defines some of its public functions jitted (`type(jnp.sin)` is its
`PjitFunction`, with `.lower`, `.trace`, `.eval_shape`, and `jax.export` takes them as
they are): 164 of `jax.numpy`, the elementwise ones mostly with `inline=True`, so that
a Jaxpr shows their equations, not a call; and some of `jax.numpy.linalg`,
`jax.scipy.linalg`, `jax.scipy.special` and `jax.lax`, which print as `jit[name=...]`.
`JAX_JITS` lists them by public module, with JAX's options. Each module defining some
of them ends with `apply(globals(), module)`, which replaces them by their jit there,
so that plax's own calls between them go through it, as JAX's do: an eager call then
runs as one cached computation, and Jaxprs show the same nested calls as JAX's.
(`plax.lax` makes its own on first use, with `jitted`: `plax.jit` is a layer above it.)
It is outside `plax.numpy`, whose import makes `plax.jit` functions, so that `plax.lax`
reads it without importing `plax.numpy`.
"""
from __future__ import annotations

from typing import Callable

import plax

# name -> (inline, static_argnames), as JAX 0.10.2's `jax.numpy` jits each function
_NUMPY: dict[str, tuple[bool, tuple[str, ...]]] = {
    **dict.fromkeys("""
        abs absolute acos acosh arccos arcsin arcsinh arctan arctan2 arctanh asin asinh atan
        atan2 atanh bitwise_invert bitwise_left_shift bitwise_not bitwise_right_shift cbrt
        ceil conjugate cos cosh deg2rad equal exp exp2 expm1 fabs float_power floor greater
        greater_equal imag invert isfinite isnan left_shift less less_equal log log10 log1p
        log2 logical_not nextafter not_equal outer positive rad2deg real reciprocal
        right_shift sign sin sinh spacing sqrt square tan tanh true_divide""".split(),
                    (True, ())),
    "dot": (True, ("precision", "preferred_element_type", "out_sharding")),
    "inner": (True, ("precision", "preferred_element_type")),
    "matmul": (True, ("precision", "preferred_element_type", "out_sharding")),
    "ravel": (True, ("order", "out_sharding")),
    "swapaxes": (True, ("axis1", "axis2")),
    "unstack": (True, ("axis",)),
    "vdot": (True, ("precision", "preferred_element_type")),
    **dict.fromkeys("""
        arccosh atleast_1d atleast_2d atleast_3d bitwise_count block clip copysign divmod
        ediff1d floor_divide fmax fmin fmod frexp gcd heaviside hypot i0 iscomplex isinf
        isreal kron lcm ldexp matvec modf nan_to_num poly polyadd polysub remainder rint
        signbit sinc sort_complex trunc vecmat""".split(), (False, ())),
    "allclose": (False, ("equal_nan",)),
    "angle": (False, ("deg",)),
    "append": (False, ("axis",)),
    "argpartition": (False, ("kth", "axis")),
    "argsort": (False, ("axis", "kind", "order", "stable", "descending", "dtype")),
    "around": (False, ("decimals",)),
    "convolve": (False, ("mode", "precision", "preferred_element_type")),
    "corrcoef": (False, ("rowvar", "dtype")),
    "correlate": (False, ("mode", "precision", "preferred_element_type")),
    "count_nonzero": (False, ("axis", "keepdims")),
    "cov": (False, ("rowvar", "bias", "ddof", "dtype")),
    "cross": (False, ("axisa", "axisb", "axisc", "axis")),
    "cumprod": (False, ("axis", "dtype")),
    "cumsum": (False, ("axis", "dtype")),
    "diagonal": (False, ("offset", "axis1", "axis2")),
    "diff": (False, ("n", "axis")),
    "digitize": (False, ("right", "method")),
    "gradient": (False, ("axis", "edge_order")),
    "isclose": (False, ("equal_nan",)),
    "lexsort": (False, ("axis",)),
    "median": (False, ("axis", "overwrite_input", "keepdims")),
    "nancumprod": (False, ("axis", "dtype")),
    "nancumsum": (False, ("axis", "dtype")),
    "nanmax": (False, ("axis", "keepdims")),
    "nanmean": (False, ("axis", "dtype", "keepdims")),
    "nanmedian": (False, ("axis", "overwrite_input", "keepdims")),
    "nanmin": (False, ("axis", "keepdims")),
    "nanpercentile": (False, ("axis", "overwrite_input", "keepdims", "method")),
    "nanprod": (False, ("axis", "dtype", "keepdims")),
    "nanquantile": (False, ("axis", "overwrite_input", "keepdims", "method")),
    "nanstd": (False, ("axis", "dtype", "keepdims")),
    "nansum": (False, ("axis", "dtype", "keepdims")),
    "nanvar": (False, ("axis", "dtype", "keepdims")),
    "packbits": (False, ("axis", "bitorder")),
    "partition": (False, ("kth", "axis")),
    "percentile": (False, ("axis", "overwrite_input", "keepdims", "method", "out_sharding")),
    "polyder": (False, ("m",)),
    "polyfit": (False, ("deg", "rcond", "full", "cov")),
    "polyint": (False, ("m",)),
    "polyval": (False, ("unroll",)),
    "put_along_axis": (False, ("axis", "inplace", "mode")),
    "quantile": (False, ("axis", "overwrite_input", "keepdims", "method")),
    "resize": (False, ("new_shape",)),
    "rollaxis": (False, ("axis", "start")),
    "rot90": (False, ("k", "axes")),
    "round": (False, ("decimals",)),
    "searchsorted": (False, ("side", "method")),
    "sort": (False, ("axis", "kind", "order", "stable", "descending")),
    "take_along_axis": (False, ("axis", "mode", "fill_value", "wrap_negative_indices")),
    "trace": (False, ("axis1", "axis2", "dtype")),
    "trapezoid": (False, ("axis",)),
    "tril": (False, ("k",)),
    "triu": (False, ("k",)),
    "unpackbits": (False, ("axis", "count", "bitorder")),
    "unwrap": (False, ("axis",)),
    "vander": (False, ("N", "increasing")),
}


# public module (under `jax.`) -> its table; outside `jax.numpy` none is inline
JAX_JITS: dict[str, dict[str, tuple[bool, tuple[str, ...]]]] = {
    "numpy": _NUMPY,
    "numpy.linalg": {
        "cholesky": (False, ("upper", "symmetrize_input")),
        "cond": (False, ("p",)),
        "eigh": (False, ("UPLO", "symmetrize_input")),
        "eigvals": (False, ()),
        "eigvalsh": (False, ("UPLO", "symmetrize_input")),
        "inv": (False, ()),
        "matrix_power": (False, ("n",)),
        "matrix_rank": (False, ("hermitian",)),
        "norm": (False, ("ord", "axis", "keepdims")),
        "qr": (False, ("mode",)),
        "solve": (False, ()),
        "svd": (False, ("full_matrices", "compute_uv", "hermitian", "subset_by_index")),
    },
    "scipy.linalg": {
        "block_diag": (False, ()),
        "convolution_matrix": (False, ("n", "mode")),
        "dft": (False, ("n", "scale", "dtype")),
        "expm": (False, ("upper_triangular", "max_squarings")),
        "expm_frechet": (False, ("method", "compute_expm")),
        "hadamard": (False, ("n", "dtype")),
        "helmert": (False, ("n", "full")),
        "hessenberg": (False, ("calc_q", "overwrite_a", "check_finite")),
        "hilbert": (False, ("n",)),
        "invhilbert": (False, ("n",)),
        "invpascal": (False, ("n", "kind")),
        "lu": (False, ("permute_l", "overwrite_a", "check_finite")),
        "lu_factor": (False, ("overwrite_a", "check_finite")),
        "lu_solve": (False, ("trans", "overwrite_b", "check_finite")),
        "pascal": (False, ("n", "kind")),
        "polar": (False, ("side", "method")),
        "rsf2csf": (False, ("check_finite",)),
        "solve_sylvester": (False, ("method",)),
    },
    "scipy.special": {"bessel_jn": (False, ("v", "n_iter"))},
    "lax": {
        "dynamic_index_in_dim": (False, ("axis", "keepdims", "allow_negative_indices")),
        "dynamic_update_index_in_dim": (False, ("axis", "allow_negative_indices")),
        "fft": (False, ("fft_type", "fft_lengths")),
    },
}


def jitted(fun: Callable, module: str, name: str | None = None) -> Callable:
    """`fun`, listed in `module`'s table (as `name`, by default its own), as its
    `plax.jit` with JAX's options."""
    inline, static_argnames = JAX_JITS[module][name or fun.__name__]
    return plax.jit(fun, inline=inline, static_argnames=static_argnames)


def apply(namespace: dict, module: str = "numpy") -> None:
    """Replaces, in a module's `namespace`, each function of `module`'s table it
    defines (not one it imports) by its `plax.jit` with JAX's options."""
    for name, fun in list(namespace.items()):
        if (name in JAX_JITS[module]
                and getattr(fun, "__module__", None) == namespace["__name__"]):
            namespace[name] = jitted(fun, module, name)
