"""plax-as-jax: an opt-in alias that makes `import jax` resolve to plax.

Libraries written for JAX (flax, optax, equinox, chex, einops, orbax) import `jax`.
With the alias on, `jax`, `jax.numpy`, `from jax import lax` and every `jax.<sub>`
are aliases of plax's modules, the JAX legacy extension surface
(`jax.interpreters.*`, `jax.extend.core`, `jax.extend.linear_util`,
`jax.api_util`) maps onto `plax.extend`, and the version attributes say which JAX
release plax implements. Off unless asked for, in one of three ways:

* `PLAX_AS_JAX=1` in the environment (read at interpreter start by the
  `plax_as_jax.pth` file this distribution installs);
* `python -m plax_as_jax script.py [args]` or `python -m plax_as_jax -m module`;
* `plax_as_jax.install()` before anything imports `jax`.

Importing this package does not turn the alias on, and plax never imports it.
"""
from __future__ import annotations

import os

ENV_VAR = "PLAX_AS_JAX"


def install() -> None:
    """Turns the alias on for this process (before `jax` is imported)."""
    from plax_as_jax._finder import install as _install
    _install()


def uninstall() -> None:
    """Turns the alias off again; alias modules are forgotten."""
    from plax_as_jax._finder import uninstall as _uninstall
    _uninstall()


def is_installed() -> bool:
    from plax_as_jax._finder import installed
    return installed()


def requested(environ=os.environ) -> bool:
    """Whether the environment asks for the alias (`PLAX_AS_JAX` set, not empty or 0)."""
    return environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "false", "no", "off")


def _startup() -> None:
    """Called by `plax_as_jax.pth` when `PLAX_AS_JAX` asks for the alias."""
    install()
