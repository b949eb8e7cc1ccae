"""`x.at[index]` with whole slices and integers is one scatter over `x` itself, as in
JAX (no array the size of `x` is made), and agrees with NumPy's `ufunc.at` for every
such index: integers, negative ones, integer arrays adjacent or apart (NumPy moves
their broadcast dimensions to the front then), `...`, traced indices."""
from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import plax
import plax.numpy as jnp

SHAPE = (3, 4, 5)
X = np.arange(60, dtype=np.float32).reshape(SHAPE) / 7
UFUNCS = {"set": None, "add": np.add, "multiply": np.multiply, "min": np.minimum,
          "max": np.maximum}


def _reference(op, index, values):
    out = X.copy()
    if op == "set":
        out[index] = values
    else:
        UFUNCS[op].at(out, index, values)
    return out


@st.composite
def window_indices(draw):
    """An index of whole slices, Python ints and integer arrays (in bounds, negative
    ones included), maybe with an ellipsis."""
    entries = []
    for size in SHAPE[:draw(st.integers(1, len(SHAPE)))]:
        kind = draw(st.sampled_from(["slice", "int", "array"]))
        if kind == "slice":
            entries.append(slice(None))
        elif kind == "int":
            entries.append(draw(st.integers(-size, size - 1)))
        else:
            shape = draw(st.sampled_from([(2,), (1,), (2, 2), (1, 2)]))
            entries.append(np.array(draw(st.lists(st.integers(-size, size - 1),
                                                  min_size=int(np.prod(shape)),
                                                  max_size=int(np.prod(shape)))),
                                    np.int32).reshape(shape))
    if draw(st.booleans()) and len(entries) < len(SHAPE):
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    return tuple(entries)


@given(index=window_indices(), op=st.sampled_from(sorted(UFUNCS)))
def test_updates_agree_with_numpy(index, op):
    values = np.linspace(-1, 1, int(np.prod(X[index].shape)), dtype=np.float32).reshape(
        X[index].shape)
    if op == "set" and any(isinstance(e, np.ndarray) for e in index):
        # repeated indices: which write wins is unspecified, so write equal values
        values = np.full(X[index].shape, 0.5, np.float32)
    expected = _reference(op, index, values)
    np.testing.assert_allclose(getattr(jnp.asarray(X).at[index], op)(values), expected,
                               rtol=1e-6)


def test_the_update_is_one_scatter_over_x():
    def update(x, i, u):
        return x.at[i].add(u), x.at[:, 2].set(0.0), x.at[0, :, i].max(1.0)
    jaxpr = plax.make_jaxpr(update)(X, np.array([0, 2], np.int32), np.ones((2, 4, 5), np.float32))
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert names.count("scatter-add") == 1 and names.count("scatter") == 1  # JAX's names
    assert names.count("scatter-max") == 1 and "iota" not in names
    for eqn in jaxpr.jaxpr.eqns:
        if eqn.primitive.name.startswith("scatter"):
            assert eqn.invars[0].aval.shape == SHAPE  # x itself, not flattened


def test_traced_indices_out_of_bounds_and_modes():
    x = jnp.zeros(5)
    add_at = plax.jit(lambda x, i: x.at[i].add(1.0))
    np.testing.assert_array_equal(add_at(x, -1), [0, 0, 0, 0, 1])
    np.testing.assert_array_equal(add_at(x, 5), np.zeros(5))  # dropped, as in JAX
    np.testing.assert_array_equal(x.at[np.array([1, 7, -9])].set(1.0), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(x.at[np.array([1, 7, -9])].set(1.0, mode="clip"),
                                  [1, 1, 0, 0, 1])
    np.testing.assert_array_equal(x.at[np.array([-1])].set(2.0, wrap_negative_indices=False),
                                  np.zeros(5))
    np.testing.assert_array_equal(plax.vmap(lambda i: x.at[i].set(1.0))(jnp.arange(3)),
                                  np.eye(3, 5))


def test_gradients_flow_to_the_values_and_the_operand():
    idx = np.array([0, 0, 2])
    loss = lambda x, v: (x.at[idx].add(v) ** 2).sum()  # noqa: E731
    gx, gv = plax.grad(loss, (0, 1))(jnp.ones((3, 2)), jnp.ones((3, 2)))
    np.testing.assert_array_equal(gx, [[6, 6], [2, 2], [4, 4]])
    np.testing.assert_array_equal(gv, [[6, 6], [6, 6], [4, 4]])


def test_mismatched_index_arrays_are_jaxs_value_error():
    with pytest.raises(ValueError, match=r"shape mismatch.*\(2,\) \(3,\)"):
        jnp.asarray(X).at[np.array([0, 1]), np.array([0, 1, 2])].set(1.0)
