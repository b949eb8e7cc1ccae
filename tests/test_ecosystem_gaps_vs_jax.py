"""Behaviours the JAX ecosystem's own test suites (flax, equinox, optax) rely on, where
JAX 0.10.2 (run in a subprocess) is the specification: `jnp.einsum`'s `_dot_general`
hook, `lax.scan`'s `_split_transpose` flag, scatters, gathers and dynamic slices
under `vmap` over an empty batch, `lax.reduce_window` with a Python `-inf` initial
value on integers, `round` of an Array, and the error an eager `pure_callback`
whose callback raises surfaces as."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import requires_jax, run_body, run_in_jax

BODY = r"""
calls = []
def counting_dot(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    calls.append(dimension_numbers)
    return lax.dot_general(lhs, rhs, dimension_numbers, precision,
                           preferred_element_type=preferred_element_type) * 2
a, b, c = inputs["a"], inputs["b"], inputs["c"]
results["einsum"] = jnp.einsum("ij,jk->ik", a, b, _dot_general=counting_dot)
results["einsum3"] = jnp.einsum("ij,jk,kl->il", a, b, c, _dot_general=counting_dot)
results["einsum_batch"] = lib.jit(lambda x, y: jnp.einsum(
    "bij,bjk->bki", x, y, _dot_general=counting_dot))(a[None].repeat(2, 0), b[None].repeat(2, 0))
results["einsum_calls"] = np.array(len(calls))

def loss(w):
    carry, ys = lax.scan(lambda c, x: (c * w + x, c), 1.0, inputs["xs"], _split_transpose=True)
    return carry + ys.sum()
results["scan_grad"] = lib.grad(loss)(np.float32(0.5))
results["scan"] = lax.scan(lambda c, x: (c + x, c), 0.0, inputs["xs"], _split_transpose=False)[0]

z, idx = np.zeros((0, 3), np.float32), np.zeros((0,), np.int32)
results["set_empty"] = lib.vmap(lambda x, i: x.at[i].set(1.0))(z, idx)
results["add_empty"] = lib.jit(lib.vmap(lambda x: x.at[0].add(1.0)))(z)
results["get_empty"] = lib.vmap(lambda x, i: x[i])(z, idx)
results["dslice_empty"] = lib.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,)))(z, idx)
results["dupdate_empty"] = lib.vmap(
    lambda x, i: lax.dynamic_update_slice(x, jnp.ones(2), (i,)))(z, idx)
results["grad_empty"] = lib.vmap(lib.grad(lambda x: x.at[0].add(1.0).sum()))(z)
results["set_nonempty"] = lib.vmap(lambda x, i: x.at[i].set(1.0))(
    np.zeros((2, 3), np.float32), np.array([2, 0], np.int32))

ints = inputs["ints"]
results["rw_max"] = lax.reduce_window(ints, -np.inf, lax.max, (2,), (1,), "VALID")
results["rw_max_same"] = lax.reduce_window(ints, -float("inf"), lax.max, (3,), (2,), "SAME")
results["rw_min"] = lax.reduce_window(ints, np.inf, lax.min, (2,), (1,), "SAME")
results["rw_sum"] = lax.reduce_window(ints, 0.0, lax.add, (2,), (1,), "VALID")

x = jnp.asarray(inputs["r"])
results["round"] = round(x)
results["round_jit"] = lib.jit(round)(x)
results["round_1"] = round(x, 1)

def failing(v):
    raise ValueError("callback failed on purpose")
try:
    lib.pure_callback(failing, lib.ShapeDtypeStruct((), np.float32), np.float32(1))
    results["callback_error"] = np.array("none")
except Exception as err:
    results["callback_error"] = np.array(f"{type(err).__name__} {isinstance(err, RuntimeError)}")
    results["callback_message"] = np.array("callback failed on purpose" in str(err))
"""


@requires_jax
def test_ecosystem_behaviours_match_jax():
    rng = np.random.default_rng(0)
    inputs = {"a": rng.standard_normal((2, 3)).astype(np.float32),
              "b": rng.standard_normal((3, 4)).astype(np.float32),
              "c": rng.standard_normal((4, 2)).astype(np.float32),
              "xs": np.arange(4, dtype=np.float32),
              "ints": np.array([3, -7, 2, 9, 0, -1], np.int32),
              "r": np.array([0.4, 1.6, 2.5, -3.5, 2.66], np.float32)}
    mine, theirs = run_body(BODY, inputs), run_in_jax(BODY, inputs)
    assert sorted(mine) == sorted(theirs)
    for key in theirs:
        assert mine[key].dtype == theirs[key].dtype, key
        assert mine[key].shape == theirs[key].shape, key
        if mine[key].dtype.kind in "fc":
            np.testing.assert_allclose(mine[key], theirs[key], rtol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


def test_einsum_dot_general_must_be_callable():
    import plax.numpy as jnp
    with pytest.raises(TypeError, match="_dot_general must be callable"):
        jnp.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)), _dot_general=3)
