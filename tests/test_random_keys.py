"""Typed PRNG keys as first-class values, raw keys, the PRNG options, and errors.

A key array is a plax array of dtype `key<fry>` (or `key<rbg>`...), held as its keys'
uint32 data: these tests move keys through indexing, pytrees, jit, vmap, control
flow, device_put and autodiff, and check that computing with them needs a
plax.random function (arithmetic is a TypeError that says so).
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import plax
import plax.numpy as jnp
import plax.random as r
from plax import lax
from plax.extend import config

KEY = r.key(0)
KEYS = r.split(KEY, 4)


def data(keys) -> np.ndarray:
    return np.asarray(r.key_data(keys))


# --- what a key is -----------------------------------------------------------------------

def test_key_arrays_print_and_describe_themselves_like_jax():
    assert repr(KEY) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert str(KEY) == repr(KEY)
    assert KEY.dtype == r.key_dtype() == r.key_dtype("threefry2x32")
    assert KEY.dtype.name == "key<fry>" and r.key(0, impl="rbg").dtype.name == "key<rbg>"
    assert jnp.issubdtype(KEY.dtype, plax.dtypes.prng_key)
    assert jnp.issubdtype(KEY.dtype, plax.dtypes.extended)
    assert (KEYS.shape, KEYS.ndim, KEYS.size, KEYS.itemsize, KEYS.nbytes) == ((4,), 1, 4, 8, 32)
    assert isinstance(KEYS, plax.Array)
    text = str(plax.make_jaxpr(lambda k: r.split(k))(KEY))
    assert "a:key<fry>[]" in text and "key<fry>[2] = random_split[shape=(2,)] a" in text


def test_key_data_and_wrap_key_data_round_trip():
    raw = data(KEYS)
    assert raw.dtype == np.uint32 and raw.shape == (4, 2)
    again = r.wrap_key_data(raw)
    assert again.dtype == KEY.dtype and (data(again) == raw).all()
    assert r.key_impl(KEYS) == "threefry2x32"
    assert r.key_impl(r.wrap_key_data(np.zeros((3, 4), np.uint32), impl="unsafe_rbg")) == \
        "unsafe_rbg"
    assert r.wrap_key_data(raw, dtype=KEY.dtype).dtype == KEY.dtype
    assert (data(r.clone(KEY)) == data(KEY)).all()


def test_key_arrays_index_reshape_and_join_as_arrays_of_keys():
    raw = data(KEYS)
    assert (data(KEYS[1]) == raw[1]).all() and (data(KEYS[-1]) == raw[3]).all()
    assert (data(KEYS[1:3]) == raw[1:3]).all()
    assert (data(KEYS[jnp.array([3, 0])]) == raw[[3, 0]]).all()
    assert (data(KEYS[np.array([True, False, True, False])]) == raw[[0, 2]]).all()
    grid = KEYS.reshape(2, 2)
    assert (data(grid.T) == raw.reshape(2, 2, 2).transpose(1, 0, 2)).all()
    assert (data(grid.ravel()) == raw).all() and (data(KEYS[None].squeeze()) == raw).all()
    assert (data(jnp.stack([KEY, KEYS[1]])) == np.stack([raw[0] * 0, raw[1]])).all()
    assert (data(jnp.concatenate([KEYS, KEYS])) == np.concatenate([raw, raw])).all()
    picked = jnp.where(jnp.array([True, False, True, False]), KEYS, KEYS[::-1])
    assert (data(picked) == raw[[0, 2, 2, 0]]).all()
    assert (data(KEYS.at[1].set(KEY)) == np.concatenate([raw[:1], 0 * raw[:1], raw[2:]])).all()
    # Out-of-bounds takes fill with all-ones key data, as JAX does.
    assert (data(KEYS.take(jnp.array([5, 0]))) == [[2**32 - 1] * 2, raw[0]]).all()
    assert (data(jnp.zeros_like(KEYS)) == 0).all()
    assert (data(jnp.broadcast_to(KEY, (3,))) == 0).all()
    assert list(map(len, (KEYS, list(KEYS)))) == [4, 4]
    assert np.asarray(KEYS == KEYS).all() and not np.asarray(KEYS[0] != KEYS[0])
    assert np.asarray(KEYS[0] != KEYS[1])


def test_arithmetic_on_keys_is_a_type_error_that_names_keys():
    for compute in (lambda: KEY + 1, lambda: KEYS * KEYS, lambda: -KEY, lambda: jnp.sin(KEY),
                    lambda: KEYS.sum(), lambda: KEYS < KEYS, lambda: lax.add(KEY, KEY),
                    lambda: KEYS.astype(np.uint32)):
        with pytest.raises(TypeError, match="key"):
            compute()
    for convert in (np.asarray, bool, int, float, lambda k: k.tolist()):
        with pytest.raises(TypeError, match="key_data"):
            convert(KEY)
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        list(KEY)


def test_keys_pickle_and_move_between_devices():
    again = pickle.loads(pickle.dumps(KEYS))
    assert again.dtype == KEYS.dtype and (data(again) == data(KEYS)).all()
    device = plax.devices()[1]
    moved = plax.device_put(KEYS, device)
    assert moved.devices() == {device} and moved.committed and moved.dtype == KEYS.dtype
    assert (data(moved) == data(KEYS)).all()
    assert r.normal(moved[0]).devices() == {device}


def test_keys_are_pytree_leaves():
    tree = {"k": KEY, "ks": [KEYS]}
    leaves = plax.tree_util.tree_leaves(tree)
    assert len(leaves) == 2 and leaves[1].dtype == KEY.dtype
    out = plax.tree_util.tree_map(lambda k: r.split(k, 3), {"a": KEY})["a"]
    assert out.shape == (3,)


def test_sharded_key_arrays_stay_sharded_through_jit(devs):
    from plax.sharding import Mesh, NamedSharding, PartitionSpec
    rows = NamedSharding(Mesh(np.array(devs), ("x",)), PartitionSpec("x"))
    keys = plax.device_put(r.split(KEY, 8), rows)
    assert keys.sharding == rows and keys.dtype == KEY.dtype
    children = plax.jit(plax.vmap(r.split))(keys)
    assert children.shape == (8, 2) and children.sharding.spec[0] == "x"
    assert (data(children) == data(plax.vmap(r.split)(r.split(KEY, 8)))).all()
    made = plax.jit(lambda k: r.split(k, 8), out_shardings=rows)(KEY)
    assert made.sharding == rows and (data(made) == data(r.split(KEY, 8))).all()
    per_device = plax.jit(plax.shard_map(
        lambda k: plax.vmap(r.fold_in)(k, lax.axis_index("x")[None]), mesh=rows.mesh,
        in_specs=PartitionSpec("x"), out_specs=PartitionSpec("x")))(keys)
    assert per_device.sharding == rows
    assert (data(per_device) == data(plax.vmap(r.fold_in)(keys, jnp.arange(8)))).all()


# --- keys under transformations -----------------------------------------------------------------

def test_keys_are_jit_arguments_and_results():
    split = plax.jit(lambda k: r.split(k))
    assert (data(split(KEY)) == data(r.split(KEY))).all()
    assert (data(split(KEY)) == data(r.split(KEY))).all()  # the cached call
    pick = plax.jit(lambda ks, i: (ks[i], lax.dynamic_slice(ks, (i,), (2,))))
    one, two = pick(KEYS, 2)
    assert (data(one) == data(KEYS)[2]).all() and (data(two) == data(KEYS)[2:4]).all()
    tree = plax.jit(lambda d: {"k": r.fold_in(d["k"], 3), "n": d["n"] + 1})({"k": KEY, "n": 1.0})
    assert (data(tree["k"]) == data(r.fold_in(KEY, 3))).all() and float(tree["n"]) == 2.0


def test_vmap_maps_over_key_arrays_and_produces_them():
    raw = data(KEYS)
    per_key = np.stack([data(r.split(k)) for k in KEYS])
    assert (data(plax.vmap(r.split)(KEYS)) == per_key).all()
    grid = KEYS.reshape(2, 2)
    normals = plax.vmap(plax.vmap(lambda k: r.normal(k, (3,))), in_axes=1)(grid)
    assert np.array_equal(np.asarray(normals)[1, 0], np.asarray(r.normal(grid[0, 1], (3,))))
    folded = plax.vmap(lambda i: r.fold_in(KEY, i))(jnp.arange(3))
    assert (data(folded) == np.stack([data(r.fold_in(KEY, i)) for i in range(3)])).all()
    assert (plax.vmap(r.key_data)(KEYS) == raw).all()


def test_keys_flow_through_control_flow():
    def body(carry, _):
        key, _ = carry
        new, sub = r.split(key)
        return (new, r.uniform(sub)), r.uniform(sub)

    (key, last), draws = lax.scan(body, (KEY, 0.0), None, length=3)
    assert key.dtype == KEY.dtype and draws.shape == (3,) and float(last) == float(draws[2])
    total, same = lax.scan(lambda c, k: (c + r.uniform(k), k), 0.0, KEYS)
    assert (data(same) == data(KEYS)).all()
    folded = lax.fori_loop(0, 3, lambda i, k: r.fold_in(k, i), KEY)
    assert (data(folded) == data(r.fold_in(r.fold_in(r.fold_in(KEY, 0), 1), 2))).all()
    choose = plax.jit(lambda p, k: lax.cond(p, lambda k: r.split(k)[0], lambda k: k, k))
    assert (data(choose(True, KEY)) == data(r.split(KEY)[0])).all()
    assert (data(choose(False, KEY)) == data(KEY)).all()


def test_batched_control_flow_selects_whole_keys():
    flags = jnp.array([True, False, True, False])
    out = plax.vmap(lambda p, k: lax.cond(p, lambda k: r.split(k)[0], lambda k: k, k))(flags,
                                                                                      KEYS)
    want = [data(r.split(k)[0]) if f else data(k) for f, k in zip([1, 0, 1, 0], KEYS)]
    assert (data(out) == np.stack(want)).all()

    def advance(k, n):
        return lax.while_loop(lambda c: c[1] < n, lambda c: (r.split(c[0])[1], c[1] + 1),
                              (k, 0))[0]

    out = plax.vmap(advance)(KEYS, jnp.arange(4))
    assert (data(out) == np.stack([data(advance(k, n)) for k, n in zip(KEYS, range(4))])).all()


def test_keys_get_float0_tangents():
    def f(k, x):
        return x * r.normal(k)

    ct_key, ct_x = plax.vjp(f, KEY, 1.0)[1](1.0)
    assert ct_key.dtype == plax.dtypes.float0 and ct_key.shape == ()
    assert float(ct_x) == float(r.normal(KEY))
    grads = plax.grad(f, argnums=(0, 1), allow_int=True)(KEY, 1.0)
    assert grads[0].dtype == plax.dtypes.float0
    for zero in (np.zeros((), plax.dtypes.float0), jnp.zeros((), plax.dtypes.float0)):
        out, tangent = plax.jvp(f, (KEY, 1.0), (zero, 1.0))
        assert float(out) == float(tangent) == float(r.normal(KEY))
    with pytest.raises(TypeError, match="key<fry>"):
        plax.grad(lambda k: r.normal(k))(KEY)


# --- the same bits however they are computed --------------------------------------------------

SAMPLERS = {
    "uniform": lambda k: r.uniform(k, (3,)),
    "normal": lambda k: r.normal(k, (3,)),
    "randint": lambda k: r.randint(k, (3,), 0, 7),
    "gamma": lambda k: r.gamma(k, 1.5, (2,)),
    "permutation": lambda k: r.permutation(k, 6),
    "bits": lambda k: r.bits(k, (3,), jnp.uint16),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_jit_vmap_and_eager_give_identical_bits(name):
    draw = SAMPLERS[name]
    eager = np.stack([np.asarray(draw(k)) for k in KEYS])
    assert np.array_equal(np.asarray(plax.vmap(draw)(KEYS)), eager)
    if name != "gamma":  # its XLA compilation is slow; vmap is what its own rules change
        assert np.array_equal(np.asarray(plax.jit(plax.vmap(draw))(KEYS)), eager)
        assert np.array_equal(np.asarray(plax.jit(draw)(KEYS[2])), eager[2])


PARAMETERISED = {
    "uniform": lambda k, v: r.uniform(k, (2,), minval=v, maxval=v + 1.0),
    "randint": lambda k, v: r.randint(k, (2,), 0, (v * 10).astype(jnp.int32) + 1),
    "gamma": lambda k, v: r.gamma(k, v),
    "poisson": lambda k, v: r.poisson(k, v * 3),
    "bernoulli": lambda k, v: r.bernoulli(k, v / 4, (3,)),
}


@pytest.mark.parametrize("name", PARAMETERISED)
def test_vmap_over_parameters_matches_a_loop(name):
    draw, values = PARAMETERISED[name], jnp.array([0.5, 1.5, 2.5])
    one_key = np.asarray(plax.vmap(draw, in_axes=(None, 0))(KEY, values))
    assert np.array_equal(one_key, np.stack([np.asarray(draw(KEY, v)) for v in values]))
    both = np.asarray(plax.vmap(draw)(KEYS[:3], values))
    assert np.array_equal(both, np.stack([np.asarray(draw(k, v)) for k, v in
                                          zip(KEYS[:3], values)]))


def test_derived_keys_are_independent():
    raw = data(r.split(KEY, 64))
    assert len({tuple(k) for k in raw}) == 64 and tuple(data(KEY)) not in {tuple(k) for k in raw}
    folds = {tuple(data(r.fold_in(KEY, i))) for i in range(64)}
    assert len(folds) == 64
    # split(k, n)[i] does not depend on n (partitionable threefry)
    assert (data(r.split(KEY, 3)) == raw[:3]).all()
    draws = np.asarray(plax.vmap(lambda k: r.uniform(k, (256,)))(r.split(KEY, 2)))
    assert abs(np.corrcoef(draws)[0, 1]) < 0.2 and not np.array_equal(draws[0], draws[1])


# --- raw keys and the options ------------------------------------------------------------------

def test_raw_keys_in_raw_keys_out():
    raw = r.PRNGKey(5)
    assert raw.dtype == np.uint32 and raw.shape == (2,) and list(np.asarray(raw)) == [0, 5]
    halves = r.split(raw)
    assert halves.dtype == np.uint32 and halves.shape == (2, 2)
    assert (np.asarray(halves) == data(r.split(r.key(5)))).all()
    assert np.array_equal(np.asarray(r.normal(raw, (2,))), np.asarray(r.normal(r.key(5), (2,))))
    assert (np.asarray(plax.jit(r.split)(raw)) == np.asarray(halves)).all()
    assert r.fold_in(np.asarray(raw), 3).dtype == np.uint32


def test_enable_custom_prng_makes_raw_key_functions_typed():
    with config.enable_custom_prng(True):
        assert r.PRNGKey(5).dtype == KEY.dtype
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            assert r.split(np.array([0, 5], np.uint32)).dtype == KEY.dtype


def test_legacy_prng_key_can_warn_or_refuse_raw_keys():
    raw = r.PRNGKey(1)
    with config.legacy_prng_key("warn"), pytest.warns(UserWarning, match="Legacy uint32 key"):
        r.split(raw)
    with config.legacy_prng_key("error"), pytest.raises(ValueError, match="Legacy uint32 key"):
        r.uniform(raw)
    r.uniform(KEY)  # typed keys are always fine


def test_seed_offset_and_default_implementation():
    with config.random_seed_offset(7):
        offset = data(r.key(3))
    assert (offset == data(r.key(10))).all()
    with config.default_prng_impl("rbg"):
        assert r.key(3).dtype.name == "key<rbg>" and r.PRNGKey(3).shape == (4,)
    assert r.key(3, impl="unsafe_rbg").dtype.name == "key<urbg>"
    assert r.key(3, dtype=r.key_dtype("rbg")).dtype.name == "key<rbg>"


def test_rbg_keys_batch_like_jax():
    """rng_bit_generator under vmap draws once, from the first key, for the whole batch."""
    keys = r.split(r.key(3, impl="rbg"), 3)
    batched = np.asarray(plax.vmap(lambda k: r.bits(k, (2,)))(keys))
    first = np.asarray(lax.rng_bit_generator(r.key_data(keys[0]), (3, 2))[1])
    assert np.array_equal(batched, first)
    new_key, bits = lax.rng_bit_generator(np.zeros(4, np.uint32), (2, 3), np.uint8)
    assert new_key.shape == (4,) and bits.dtype == np.uint8 and bits.shape == (2, 3)


# --- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda: r.normal(KEY, (3.0,)), TypeError, "integer"),
    (lambda: r.normal(KEY, (-1,)), ValueError, "negative"),
    (lambda: r.normal(KEYS), ValueError, "accepts a single key"),
    (lambda: r.split([1, 2]), TypeError, "unexpected PRNG key type"),
    (lambda: r.split(np.array([1, 2, 3], np.uint32)), TypeError, "shape ends with"),
    (lambda: r.split(np.array([1.0, 2.0], np.float32)), TypeError, "uint32"),
    (lambda: r.split(KEY, 2.5), TypeError, "num"),
    (lambda: r.key(np.array([1, 2])), TypeError, "scalar seed"),
    (lambda: r.key(KEY), TypeError, "PRNG key"),
    (lambda: r.key(1.5), TypeError, "integer"),
    (lambda: r.key(0, impl="foo"), ValueError, "unrecognized PRNG implementation"),
    (lambda: r.key(0, impl=3), TypeError, "unrecognized type"),
    (lambda: r.fold_in(KEY, jnp.arange(3)), TypeError, "scalar"),
    (lambda: r.fold_in(KEY, -1), OverflowError, "uint32"),
    (lambda: r.bits(KEY, (2,), jnp.int32), ValueError, "unsigned"),
    (lambda: r.uniform(KEY, (2,), jnp.int32), ValueError, "float dtype"),
    (lambda: r.uniform(KEY, (2,), minval=jnp.ones(3)), TypeError, "shapes"),
    (lambda: r.randint(KEY, (2,), 0, 5, jnp.float32), TypeError, "integer dtypes"),
    (lambda: r.randint(KEY, (2,), jnp.zeros(3, jnp.int32), 5), ValueError, "broadcast"),
    (lambda: r.choice(KEY, 3, (5,), replace=False), ValueError, "larger sample"),
    (lambda: r.choice(KEY, 3, (2,), p=jnp.ones(4) / 4), ValueError, "p must be"),
    (lambda: r.choice(KEY, 3, 2), TypeError, "sequence"),
    (lambda: r.categorical(KEY, jnp.zeros((2, 3)), shape=(4,)), ValueError, "broadcast"),
    (lambda: r.poisson(r.key(0, impl="rbg"), 2.0), NotImplementedError, "threefry"),
    (lambda: r.bernoulli(KEY, 1), TypeError, "floating"),
    (lambda: r.gamma(KEY, 1.0, dtype=jnp.int32), ValueError, "float dtype"),
    (lambda: r.permutation(KEY, 2.5), TypeError, "integer"),
    (lambda: r.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(2), method="lu"),
     ValueError, "method"),
    (lambda: r.wrap_key_data(np.zeros((3,), np.uint32)), TypeError, "shape ends with"),
    (lambda: r.wrap_key_data(np.zeros((5, 2), np.int32)), TypeError, "uint32"),
    (lambda: r.uniform(KEY, out_sharding=object()), TypeError, "NamedSharding"),
])
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_key_arrays_compare_with_the_closeness_functions():
    """As JAX's: isclose/allclose of keys is equality, and array_equal's equal_nan has
    no NaNs to look for (chex compares key pytrees this way)."""
    keys = plax.random.split(plax.random.key(0))
    other = plax.random.split(plax.random.key(1))
    assert bool(jnp.allclose(keys, keys)) and not bool(jnp.allclose(keys, other))
    assert jnp.isclose(keys, keys).tolist() == [True, True]
    assert bool(jnp.array_equal(keys, keys, equal_nan=True))
    assert bool(plax.jit(lambda a, b: jnp.array_equal(a, b, equal_nan=True))(keys, keys))
