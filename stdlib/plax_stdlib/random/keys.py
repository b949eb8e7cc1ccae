"""Making keys and new keys from keys: `key`, `PRNGKey`, `split`, `fold_in`, `clone`,
`key_data`, `wrap_key_data`, `key_impl`, `bits`.

Typed keys (`key(0)`: a scalar array of dtype `key<fry>`) carry their
implementation. Raw keys (`PRNGKey(0)`: `uint32[2]`) are the legacy form: every
function accepts them, reads them as keys of the default implementation, and gives
raw keys back — unless `jax_enable_custom_prng` is set, which makes the results
typed. `jax_legacy_prng_key` can make raw keys a warning or an error.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

import plax
from plax.extend import config, dtypes
from plax.extend.core import Tracer, canonical_dim
from plax_stdlib.lax.dimensions import dimension_as_value
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.impls import (PRNGImpl, PRNGSpec, default_prng_impl, key_spec,
                                     resolve_prng_impl)
from plax_stdlib.random.sampling import canonicalize_shape, sampled

_LEGACY = ("Legacy uint32 key array passed as key to plax.random function. Please create "
           "keys using plax.random.key(). If use of a raw key array was intended, set "
           'jax_legacy_prng_key="allow".')


def _is_arraylike(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic, Tracer, int, float, complex, bool, plax.Array))


def check_prng_key(name: str, key, *, allow_batched: bool = False):
    """`key` as a typed key array, and whether it was a raw key (then results are
    returned raw too). ValueError for a key array where one key is expected."""
    if prims.is_key_array(key):
        typed, wrapped = key, False
    elif _is_arraylike(key):
        typed, wrapped = wrap_key_data(key, impl=default_prng_impl()), True
        mode = config.legacy_prng_key.value
        if mode == "error":
            raise ValueError(_LEGACY)
        if mode == "warn":
            warnings.warn(_LEGACY, stacklevel=3)
        elif config.enable_custom_prng.value:
            warnings.warn("Raw arrays as random keys to plax.random functions are "
                          "deprecated. Assuming valid threefry2x32 key for now.",
                          FutureWarning, stacklevel=3)
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and typed.ndim:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{np.shape(key)} != (). Use plax.vmap for batching.")
    return typed, wrapped


def return_prng_keys(was_wrapped: bool, keys):
    """Raw keys given, raw keys back (unless `jax_enable_custom_prng`)."""
    if was_wrapped and not config.enable_custom_prng.value:
        return prims.random_unwrap(keys)
    return keys


def _seed_key(ctor_name: str, seed, impl_spec) -> plax.Array:
    impl = resolve_prng_impl(impl_spec)
    if prims.is_key_array(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use plax.vmap for batching")
    # A Python int is first an int64, so that large ones (hashes) wrap instead of failing.
    seeds = plax.numpy.asarray(np.int64(seed) if isinstance(seed, int) else seed)
    if not dtypes.issubdtype(seeds.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got dtype {seeds.dtype}")
    offset = config.random_seed_offset.value
    if offset:
        seeds = seeds + offset
    return prims.random_seed(seeds, impl)


def key(seed, *, impl=None, dtype=None) -> plax.Array:
    """Makes a typed PRNG key from an integer seed.

    plax's random numbers are functional: a key is an explicit value, every sampler
    takes one, and the same key always gives the same numbers. Never reuse a key
    for two draws that should be independent: `split` it instead.

    Args:
        seed: a Python int or a scalar integer array.
        impl: the PRNG implementation: `"threefry2x32"` (the default, unless
            `jax_default_prng_impl` says otherwise), `"rbg"` or `"unsafe_rbg"`.
        dtype: a key dtype naming the implementation instead (not with `impl`).

    Returns:
        A scalar array of a key dtype (`key<fry>` for threefry); `random.key_data`
        shows its raw bits.

    Raises:
        ValueError: both `impl` and `dtype` given.
        TypeError: a seed that is not an integer.

    Examples:
        >>> import plax
        >>> k = plax.random.key(0)
        >>> k.shape, k.dtype
        ((), key<fry>)
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "plax.random.key")
        impl = dtype
    return _seed_key("key", seed, impl)


def PRNGKey(seed, *, impl=None) -> plax.Array:
    """Makes a raw (legacy) PRNG key from an integer seed: a `uint32[2]` array for
    threefry.

    New code should prefer `random.key`, whose typed keys cannot be mixed up with
    ordinary integers; every sampler accepts both.

    Args:
        seed: a Python int or a scalar integer array.
        impl: the PRNG implementation (see `random.key`).

    Returns:
        The key's raw bits as a `uint32` array.

    Examples:
        >>> import plax
        >>> plax.random.PRNGKey(0)
        Array([0, 0], dtype=uint32)
    """
    return return_prng_keys(True, _seed_key("PRNGKey", seed, impl))


def fold_in(key, data) -> plax.Array:
    """Derives a new key from `key` and an integer, e.g. a step or a process index.

    Unlike `split`, the derived key is addressed by `data`: the same `(key, data)`
    always gives the same key, and different `data` give independent keys.

    Args:
        key: a key (typed or raw).
        data: a 32-bit integer (a Python int or a scalar integer array).

    Returns:
        A key of the kind `key` is.

    Examples:
        >>> import plax
        >>> k = plax.random.key(0)
        >>> bits = lambda key: plax.random.key_data(key).tolist()
        >>> bits(plax.random.fold_in(k, 7)) == bits(plax.random.fold_in(k, 7))
        True
        >>> bits(plax.random.fold_in(k, 7)) == bits(plax.random.fold_in(k, 8))
        False
    """
    typed, wrapped = check_prng_key("fold_in", key)
    if np.ndim(data):
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use plax.vmap for batching.")
    if isinstance(data, int) and not 0 <= data < 2 ** 32:
        raise OverflowError(f"Python integer {data} out of bounds for uint32")
    data = dimension_as_value(data)  # a symbolic size folds in its value
    return return_prng_keys(wrapped, prims.random_fold_in(typed, data))


def split_typed(key, num: int | Sequence[int] = 2) -> plax.Array:
    """`split` of one typed key (what samplers use internally)."""
    if key.ndim:
        raise TypeError(f"split accepts a single key, but was given a key array of shape "
                        f"{key.shape} != (). Use plax.vmap for batching.")
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    try:
        shape = tuple(canonical_dim(n) for n in shape)  # symbolic sizes stay
    except TypeError:
        raise TypeError(f"split: num must be an int or a tuple of ints, got {num!r}") from None
    if any(n < 0 for n in shape):
        raise ValueError(f"split: num must be non-negative, got {num!r}")
    return prims.random_split(key, shape)


def split(key, num: int | Sequence[int] = 2) -> plax.Array:
    """Derives new, independent keys from `key`.

    Args:
        key: a key (typed, from `random.key`, or raw, from `random.PRNGKey`).
        num: how many keys: an int, or a shape for an array of keys.

    Returns:
        An array of keys of shape `(num,)` (or `num`), of the kind `key` is.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> key, subkey = plax.random.split(key)   # one to keep, one to use
        >>> plax.random.split(key, (2, 3)).shape
        (2, 3)
    """
    typed, wrapped = check_prng_key("split", key)
    return return_prng_keys(wrapped, split_typed(typed, num))


def clone(key) -> plax.Array:
    """Returns the same key, marked as not yet consumed.

    Under key-reuse checking (`jax_debug_key_reuse`), using a key twice is an
    error; a clone may be used once more, as a deliberate reuse.

    Args:
        key: a typed PRNG key array.

    Returns:
        A key array equal to `key`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> k2 = plax.random.clone(key)
        >>> bool((plax.random.key_data(k2) == plax.random.key_data(key)).all())
        True
    """
    return prims.random_clone_p.bind(key)


def key_impl(keys) -> str | PRNGSpec:
    """The name of the PRNG implementation that made a key array.

    Args:
        keys: a typed key array.

    Returns:
        The implementation's name (or its spec).

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> plax.random.key_impl(key)
        'threefry2x32'
    """
    typed, _ = check_prng_key("key_impl", keys, allow_batched=True)
    return key_spec(typed.dtype._impl)


def key_data(keys) -> plax.Array:
    """The raw unsigned integers inside a typed key array.

    Args:
        keys: a typed key array (from `plax.random.key`), or a legacy uint32 key.

    Returns:
        A uint32 array of shape `keys.shape + key_shape` (threefry: (2,)).

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> plax.random.key_data(key)
        Array([0, 0], dtype=uint32)
    """
    typed, _ = check_prng_key("key_data", keys, allow_batched=True)
    return prims.random_unwrap(typed)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> plax.Array:
    """Makes a typed key array from raw key data (the inverse of `key_data`), e.g.
    to restore keys saved as integers.

    Args:
        key_bits_array: a uint32 array of shape `(..., *key_shape)` (threefry:
            trailing dimension 2).
        impl: the PRNG implementation (default: the `jax_default_prng_impl`
            option's).
        dtype: a key dtype, instead of `impl`.

    Returns:
        A key array of shape `key_bits_array.shape[:-len(key_shape)]`.

    Raises:
        TypeError: the data's trailing shape does not match the implementation.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> k = plax.random.wrap_key_data(jnp.array([0, 42], jnp.uint32))
        >>> k.shape, plax.random.key_data(k)
        ((), Array([ 0, 42], dtype=uint32))
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "plax.random.wrap_key_data")
        impl = dtype
    impl = impl if isinstance(impl, PRNGImpl) else resolve_prng_impl(impl)
    if not hasattr(key_bits_array, "shape") or not hasattr(key_bits_array, "dtype"):
        raise TypeError(f"invalid PRNG key data: expected an array of uint32 key data, got "
                        f"{key_bits_array!r}")
    return prims.random_wrap(key_bits_array, impl)


def bits(key, shape=(), dtype=None, *, out_sharding=None) -> plax.Array:
    """Random bits: unsigned integers whose every bit is independently 0 or 1 with
    equal probability.

    Args:
        key: a PRNG key.
        shape: the shape of the result.
        dtype: an unsigned integer dtype (default: uint32; uint64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        ValueError: `dtype` is not an unsigned integer dtype.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> b = plax.random.bits(key, (3,), plax.numpy.uint8)
        >>> b.shape, b.dtype
        ((3,), dtype('uint8'))
    """
    typed, _ = check_prng_key("bits", key)
    dtype = (dtypes.default_uint_dtype() if dtype is None
             else dtypes.check_and_canonicalize_user_dtype(dtype, "bits"))
    if not dtypes.issubdtype(dtype, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    shape = canonicalize_shape(shape, "bits")
    return sampled("bits", out_sharding, shape,
                   lambda k: prims.random_bits(k, dtype.itemsize * 8, shape), typed)
