"""Basic indexing (`x[...]`) against NumPy: ints, slices with any step, None,
Ellipsis, traced scalar indices; and the errors for bad indices."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import plax

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

INDICES = [
    0, -1, 2, (1, 2), (-1, -4, 4), slice(None), slice(1, None), slice(None, None, -1),
    slice(-2, None, -2), slice(10, -10, -1), slice(5, 1), (Ellipsis, 0), (0, Ellipsis, -1),
    (None, 1), (slice(None), None, 2), (Ellipsis, None), (1, slice(3, 0, -2), slice(None, 4, 3)),
    np.int32(2), (np.int64(-2), np.array(1)), (None, Ellipsis, None, 0), (),
    (slice(2, 0, -1), slice(None, 0, -1), slice(-10, 10, -1)), (1, slice(4, None, -2)),
]


def test_basic_indexing_matches_numpy():
    outs = plax.jit(lambda x: [x[i] for i in INDICES])(X)
    for index, out in zip(INDICES, outs):
        np.testing.assert_array_equal(out, X[index], err_msg=repr(index))
        assert out.shape == X[index].shape, repr(index)


def test_a_whole_index_returns_the_array_and_slices_use_one_primitive():
    closed = plax.make_jaxpr(lambda x: (x[...], x[:, ::-2, 1:]))(X)
    assert closed.jaxpr.outvars[0] is closed.jaxpr.invars[0]
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["slice", "rev"]  # as JAX


def test_traced_scalar_indices_use_dynamic_slice():
    """With static negative integers, out-of-bounds ones (clamped, as JAX) and negative
    steps beside the traced index."""
    f = plax.jit(lambda x, i, j: (x[i], x[1, j, ::2], x[i, -1], x[-1, ::-1, j],
                                  x[i, 2:0:-1, -7], x[i, 9, 4::-3]))
    for i, j in [(1, 3), (-1, -2), (0, 0)]:
        outs = f(X, np.int32(i), np.int32(j))
        for out, want in zip(outs, (X[i], X[1, j, ::2], X[i, -1], X[-1, ::-1, j],
                                    X[i, 2:0:-1, 0], X[i, 3, 4::-3])):
            np.testing.assert_array_equal(out, want)
    names = [e.primitive.name for e in plax.make_jaxpr(lambda x, i: x[i])(X, 1).jaxpr.eqns]
    assert "dynamic_slice" in names


_index_entry = st.one_of(
    st.integers(-3, 2),
    st.builds(slice, st.none() | st.integers(-6, 6), st.none() | st.integers(-6, 6),
              st.none() | st.integers(-3, 3).filter(bool)),
    st.none())


@given(st.lists(_index_entry, max_size=4).filter(
    lambda idx: sum(e is not None for e in idx) <= 3))
def test_index_shapes_match_numpy(index):
    index = tuple(index)
    aval = plax.make_jaxpr(lambda x: x[index])(X).out_avals[0]
    assert aval.shape == X[index].shape


@pytest.mark.parametrize("index,error,match", [
    ((0, slice(None), 0, 0), IndexError, "too many indices"),
    ((0, 0, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (1.5, TypeError, "integer or boolean type, got indexer with type float64"),
    ((np.array([0, 2]), np.array([0, 1, 2])), ValueError, r"shape mismatch.*\(2,\) \(3,\)"),
    ((0, [0, 1.5]), TypeError, "integer or boolean type"),
    ([0, 1], TypeError, "non-tuple sequence"),
    (np.array([True, False]), IndexError, "boolean index did not match"),
    (np.array(1.0), TypeError, "integer or boolean type"),
])
def test_bad_indices(index, error, match):
    with pytest.raises(error, match=match):
        plax.make_jaxpr(lambda x: x[index])(X)


def test_traced_slice_bounds_are_rejected():
    with pytest.raises(IndexError, match="static start/stop/step"):
        plax.make_jaxpr(lambda x, i: x[i:])(X, 1)
