"""`plax.experimental.pjit`: JAX's older name for `plax.jit`.

`pjit(fun, in_shardings, out_shardings, ...)` takes jit's options, positionally too.
As in JAX (deprecated since 0.8), reading `pjit` from this module warns with a
DeprecationWarning.
"""
from __future__ import annotations

import warnings

from plax_transforms.jit import jit as _jit


def _pjit(fun, in_shardings=None, out_shardings=None, static_argnums=None,
          static_argnames=None, donate_argnums=None, donate_argnames=None,
          keep_unused: bool = False, device=None, backend=None, inline: bool = False,
          compiler_options=None):
    """`plax.jit(fun, ...)` with its options in JAX's positional order."""
    return _jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
                static_argnums=static_argnums, static_argnames=static_argnames,
                donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                compiler_options=compiler_options)


def __getattr__(name: str):
    if name == "pjit":
        warnings.warn("plax.experimental.pjit.pjit is deprecated, as "
                      "jax.experimental.pjit.pjit is since JAX 0.8.0; use plax.jit instead",
                      DeprecationWarning, stacklevel=2)
        return _pjit
    raise AttributeError(f"module 'plax.experimental.pjit' has no attribute {name!r}")
