"""PRNG implementations and the dtype of their keys.

A `PRNGImpl` says how one key is stored (`key_shape` uint32 words) and gives the
four functions on that data (seed, split, fold_in, random_bits), each written for a
single key with `plax.lax`. `KeyTy(impl)` is the extended dtype of typed key arrays
(`key<fry>`): a key array is a plax array of that dtype, stored as its keys' data
(`key<fry>[3]` as `u32[3,2]`). Implementations are registered by name, and
`jax_default_prng_impl` picks the one used when none is given.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import NamedTuple

import numpy as np

from plax.extend import config, dtypes

Shape = tuple[int, ...]


class PRNGImpl(NamedTuple):
    """A PRNG: `seed(int[]) -> K`, `split(K, shape) -> K[*shape]`,
    `fold_in(K, uint32[]) -> K`, `random_bits(K, bit_width, shape) -> uint[*shape]`,
    where `K` is `uint32[*key_shape]`; `tag` is the short name in `key<tag>`."""
    key_shape: Shape
    seed: Callable
    split: Callable
    random_bits: Callable
    fold_in: Callable
    name: str
    tag: str

    def __hash__(self) -> int:
        return hash(self.tag)

    def __eq__(self, other) -> bool:
        return isinstance(other, PRNGImpl) and self.tag == other.tag

    def __str__(self) -> str:
        return self.tag


prngs: dict[str, PRNGImpl] = {}


def register_prng(impl: PRNGImpl) -> None:
    if impl.name in prngs:
        raise ValueError(f"a PRNG named {impl.name!r} is already registered")
    prngs[impl.name] = impl


class KeyTy(dtypes.ExtendedDType):
    """The dtype of arrays of keys of one PRNG implementation (`key<fry>`)."""
    type = dtypes.prng_key
    physical_dtype = np.dtype(np.uint32)

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def element_shape(self) -> Shape:
        return self._impl.key_shape

    def __eq__(self, other) -> bool:
        return type(other) is KeyTy and self._impl == other._impl

    def __hash__(self) -> int:
        return hash((KeyTy, self._impl))

    def full(self, shape, fill_value):
        from plax_stdlib import lax, numpy as jnp
        from plax_stdlib.random import key_primitives as prims  # they need this module
        data_shape = (*shape, *self._impl.key_shape)
        if prims.is_key_array(fill_value):
            data = jnp.broadcast_to(prims.random_unwrap(fill_value), data_shape)
        else:
            data = lax.full(data_shape, fill_value, np.uint32)
        return prims.random_wrap(data, self._impl)

    def __reduce__(self):
        return (key_dtype, (self._impl.name,))


class PRNGSpec:
    """Names a PRNG implementation (what `key_impl` returns for unregistered ones)."""
    __slots__ = ("_impl",)

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    def __repr__(self) -> str:
        return f"PRNGSpec({self._impl.name!r})"

    def __str__(self) -> str:
        return str(self._impl)

    def __hash__(self) -> int:
        return hash(self._impl)

    def __eq__(self, other) -> bool:
        return isinstance(other, PRNGSpec) and self._impl == other._impl


def default_prng_impl() -> PRNGImpl:
    """The implementation `jax_default_prng_impl` names."""
    return prngs[config.default_prng_impl.value]


def resolve_prng_impl(spec: str | PRNGSpec | PRNGImpl | KeyTy | Hashable | None) -> PRNGImpl:
    """The implementation an `impl=`/`dtype=` argument names (None: the default)."""
    if spec is None:
        return default_prng_impl()
    if isinstance(spec, PRNGImpl):
        return spec
    if isinstance(spec, (PRNGSpec, KeyTy)):
        return spec._impl
    if isinstance(spec, str):
        if spec in prngs:
            return prngs[spec]
        known = ", ".join(f'"{name}"' for name in prngs)
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one '
                         f"of: {known}?")
    raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


def key_dtype(impl_spec: str | PRNGSpec | PRNGImpl | None = None) -> KeyTy:
    """The dtype of the keys of a PRNG implementation.

    Args:
        impl_spec: an implementation name (`"threefry2x32"`, `"rbg"`,
            `"unsafe_rbg"`), spec or implementation (default: the
            `jax_default_prng_impl` option's).

    Returns:
        The key dtype, e.g. `key<fry>`.

    Raises:
        ValueError: an unknown implementation name.

    Examples:
        >>> import plax
        >>> plax.random.key_dtype("threefry2x32")
        key<fry>
    """
    return KeyTy(resolve_prng_impl(impl_spec))


def key_spec(impl: PRNGImpl) -> str | PRNGSpec:
    """What `key_impl` reports: the name of a registered implementation."""
    return impl.name if prngs.get(impl.name) == impl else PRNGSpec(impl)
