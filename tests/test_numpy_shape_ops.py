"""plax.numpy shape manipulation, joining/splitting, sorting and diagonals against
NumPy, batched into a few jitted functions; shape errors checked abstractly."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import plax
import plax.numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
M = np.array([[3, 1, 2], [9, 7, 8], [5, 4, 6], [0, -1, 2]], np.int32)

# name → (plax expression, NumPy expression), both of X (2, 3, 4) and M (4, 3).
CASES = {
    "reshape": (lambda x, m: jnp.reshape(x, (4, -1)), lambda x, m: np.reshape(x, (4, -1))),
    "reshape_method": (lambda x, m: x.reshape(6, 4), lambda x, m: x.reshape(6, 4)),
    "ravel": (lambda x, m: jnp.ravel(x), lambda x, m: np.ravel(x)),
    "reshape_F": (lambda x, m: jnp.reshape(x, (4, -1), order="F"),
                  lambda x, m: np.reshape(x, (4, -1), order="F")),
    "reshape_A": (lambda x, m: x.reshape((3, 8), order="A"),
                  lambda x, m: x.reshape((3, 8), order="A")),
    "ravel_F": (lambda x, m: jnp.ravel(m, order="F"), lambda x, m: np.ravel(m, order="F")),
    "flatten_F": (lambda x, m: x.flatten("F"), lambda x, m: x.flatten("F")),
    "ravel_K": (lambda x, m: jnp.ravel(x, "K"), lambda x, m: np.ravel(x, "K")),
    "transpose": (lambda x, m: jnp.transpose(x, (2, 0, 1)), lambda x, m: x.transpose(2, 0, 1)),
    "T": (lambda x, m: x.T, lambda x, m: x.T),
    "swapaxes": (lambda x, m: jnp.swapaxes(x, 0, -1), lambda x, m: np.swapaxes(x, 0, -1)),
    "moveaxis": (lambda x, m: jnp.moveaxis(x, (0, 1), (-1, 0)),
                 lambda x, m: np.moveaxis(x, (0, 1), (-1, 0))),
    "expand_dims": (lambda x, m: jnp.expand_dims(x, (0, -1)),
                    lambda x, m: np.expand_dims(x, (0, -1))),
    "squeeze": (lambda x, m: jnp.squeeze(x[:, :1, None], axis=(1, 2)),
                lambda x, m: np.squeeze(x[:, :1, None], axis=(1, 2))),
    "concatenate": (lambda x, m: jnp.concatenate([m, m * 2], axis=1),
                    lambda x, m: np.concatenate([m, m * 2], axis=1)),
    "concatenate_none": (lambda x, m: jnp.concatenate([x, m], axis=None),
                         lambda x, m: np.concatenate([x, m], axis=None).astype(np.float32)),
    "stack": (lambda x, m: jnp.stack([m, m], axis=-1), lambda x, m: np.stack([m, m], -1)),
    "hstack": (lambda x, m: jnp.hstack([m[0], m[1]]), lambda x, m: np.hstack([m[0], m[1]])),
    "vstack": (lambda x, m: jnp.vstack([m[0], m[1]]), lambda x, m: np.vstack([m[0], m[1]])),
    "dstack": (lambda x, m: jnp.dstack([m, m]), lambda x, m: np.dstack([m, m])),
    "broadcast_to": (lambda x, m: jnp.broadcast_to(m[0], (2, 3)),
                     lambda x, m: np.broadcast_to(m[0], (2, 3))),
    "atleast_2d": (lambda x, m: jnp.atleast_2d(m[0]), lambda x, m: np.atleast_2d(m[0])),
    "atleast_3d": (lambda x, m: jnp.atleast_3d(m), lambda x, m: np.atleast_3d(m)),
    "tile": (lambda x, m: jnp.tile(m[0], (2, 2)), lambda x, m: np.tile(m[0], (2, 2))),
    "repeat": (lambda x, m: jnp.repeat(m, 2, axis=0), lambda x, m: np.repeat(m, 2, axis=0)),
    "repeat_each": (lambda x, m: jnp.repeat(m, np.array([0, 2, 1]), axis=1),
                    lambda x, m: np.repeat(m, [0, 2, 1], axis=1)),
    "repeat_flat": (lambda x, m: jnp.repeat(m, 2), lambda x, m: np.repeat(m, 2)),
    "flip": (lambda x, m: jnp.flip(x, (0, 2)), lambda x, m: np.flip(x, (0, 2))),
    "fliplr": (lambda x, m: jnp.fliplr(m), lambda x, m: np.fliplr(m)),
    "flipud": (lambda x, m: jnp.flipud(m), lambda x, m: np.flipud(m)),
    "roll": (lambda x, m: jnp.roll(x, 5), lambda x, m: np.roll(x, 5)),
    "roll_axes": (lambda x, m: jnp.roll(x, (1, -2), axis=(1, 2)),
                  lambda x, m: np.roll(x, (1, -2), axis=(1, 2))),
    "diagonal": (lambda x, m: jnp.diagonal(x, 1, 1, 2), lambda x, m: np.diagonal(x, 1, 1, 2)),
    "diagonal_neg": (lambda x, m: jnp.diagonal(m, -1), lambda x, m: np.diagonal(m, -1)),
    "trace": (lambda x, m: jnp.trace(m), lambda x, m: np.trace(m)),
    "triu": (lambda x, m: jnp.triu(m, 1), lambda x, m: np.triu(m, 1)),
    "tril": (lambda x, m: jnp.tril(x, -1), lambda x, m: np.tril(x, -1)),
    "sort": (lambda x, m: jnp.sort(m, axis=0), lambda x, m: np.sort(m, axis=0)),
    "sort_flat_desc": (lambda x, m: jnp.sort(m, axis=None, descending=True),
                       lambda x, m: np.sort(m, axis=None)[::-1]),
    "argsort": (lambda x, m: jnp.argsort(m), lambda x, m: np.argsort(m, kind="stable")),
    "take": (lambda x, m: jnp.take(m, np.array([[5, 0], [11, 2]])),
             lambda x, m: np.take(m, [[5, 0], [11, 2]])),
    "take_axis": (lambda x, m: jnp.take(x, np.array([2, 0, -1]), axis=2),
                  lambda x, m: np.take(x, [2, 0, -1], axis=2)),
    "nonzero_size": (lambda x, m: jnp.nonzero(m > 4, size=6, fill_value=-1),
                     lambda x, m: tuple(np.concatenate([i, [-1]]) for i in np.nonzero(m > 4))),
}


def _canonical(dtype):
    """NumPy's 64-bit result dtypes as plax gives them with x64 off."""
    return {np.dtype(np.int64): np.dtype(np.int32)}.get(dtype, dtype)


def test_shape_functions_match_numpy():
    outs = plax.jit(lambda x, m: {k: fn(x, m) for k, (fn, _) in CASES.items()})(X, M)
    for name, (_, ref) in CASES.items():
        expected = ref(X, M)
        actual = outs[name]
        if isinstance(expected, tuple):
            for a, e in zip(actual, expected):
                np.testing.assert_array_equal(a, e, err_msg=name)
            continue
        assert actual.shape == expected.shape, name
        assert actual.dtype == _canonical(expected.dtype), name
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def test_split_and_array_split():
    outs = plax.jit(lambda x: (jnp.split(x, 2), jnp.split(x, [1, 3], axis=2),
                               jnp.array_split(x, 3, axis=2)))(X)
    for got, expected in zip(outs, (np.split(X, 2), np.split(X, [1, 3], axis=2),
                                    np.array_split(X, 3, axis=2))):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
    with pytest.raises(ValueError, match="equal division"):
        jnp.split(X, 3, axis=2)
    # Unlike NumPy, JAX does not count negative indices from the end.
    with pytest.raises(ValueError, match="Sizes passed to split must be nonnegative"):
        jnp.split(X, [1, -1], axis=2)


def test_vsplit_hsplit_dsplit_take_any_array_with_the_axis():
    # JAX's (not NumPy's) rule: vsplit splits a 1-D array too; an array without the
    # axis is an IndexError, not NumPy's ValueError
    np.testing.assert_array_equal(jnp.vsplit(np.arange(6), 3)[1], [2, 3])
    np.testing.assert_array_equal(jnp.hsplit(np.arange(6), [2])[1], [2, 3, 4, 5])
    assert [p.shape for p in jnp.dsplit(X, [1])] == [(2, 3, 1), (2, 3, 3)]
    for split, x in ((jnp.vsplit, np.float32(1)), (jnp.hsplit, np.float32(1)),
                     (jnp.dsplit, M)):
        with pytest.raises(IndexError, match="out of bounds"):
            split(x, 1)


def test_argsort_is_stable_with_ties_and_descending():
    x = np.array([3, 1, 3, 2, 1, 3], np.int32)
    asc, desc = plax.jit(lambda v: (jnp.argsort(v), jnp.argsort(v, descending=True)))(x)
    np.testing.assert_array_equal(asc, np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(desc, [0, 2, 5, 3, 1, 4])


def test_roll_with_traced_shift():
    out = plax.jit(lambda x, s: jnp.roll(x, s, axis=2))(X, np.int32(-3))
    np.testing.assert_array_equal(out, np.roll(X, -3, axis=2))


def test_take_modes_for_out_of_range_indices():
    x = np.arange(4, dtype=np.float32)
    idx = np.array([0, 5, -1, -6])
    fill, clip, wrap = plax.jit(lambda v: (jnp.take(v, idx), jnp.take(v, idx, mode="clip"),
                                           jnp.take(v, idx, mode="wrap")))(x)
    np.testing.assert_array_equal(fill, [0, np.nan, 3, np.nan])
    np.testing.assert_array_equal(clip, np.take(x, idx, mode="clip"))
    np.testing.assert_array_equal(wrap, np.take(x, idx, mode="wrap"))


def test_nonzero_needs_size_under_tracing():
    with pytest.raises(plax.ConcretizationTypeError, match="size"):
        plax.make_jaxpr(jnp.nonzero)(np.ones(3, np.float32))
    rows, cols = jnp.nonzero(M > 4)
    np.testing.assert_array_equal(rows, np.nonzero(M > 4)[0])
    np.testing.assert_array_equal(cols, np.nonzero(M > 4)[1])


def test_where_with_one_argument_is_nonzero():
    (idx,) = jnp.where(np.array([0, 3, 0, 1]))
    np.testing.assert_array_equal(idx, [1, 3])


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_reshape_and_transpose_shapes(shape, data):
    size = int(np.prod(shape))
    new_shape = data.draw(st.sampled_from([(size,), (-1,), (1, size), (size, -1)]))
    perm = data.draw(st.permutations(range(len(shape))))
    reshaped, transposed = plax.make_jaxpr(lambda x: (jnp.reshape(x, new_shape),
                                                      jnp.transpose(x, perm)))(
        np.ones(shape, np.float32)).out_avals
    assert reshaped.shape == np.ones(shape).reshape(new_shape).shape
    assert transposed.shape == np.ones(shape).transpose(perm).shape


@pytest.mark.parametrize("call,error,match", [
    (lambda x: jnp.reshape(x, (5,)), TypeError,
     r"cannot reshape array of shape \(2, 3, 4\) \(size 24\) into shape \(5,\) \(size 5\)"),
    (lambda x: jnp.reshape(x, (5, -1)), TypeError, "cannot reshape"),
    (lambda x: jnp.reshape(np.ones(6), (5, -1)), ValueError, "cannot reshape"),  # NumPy's
    (lambda x: jnp.reshape(x, (-1, -1)), ValueError, "one unknown dimension"),
    (lambda x: jnp.reshape(x, (24,), order="K"), ValueError, "order must be one of"),
    (lambda x: jnp.ravel(x, order="X"), ValueError, "order must be one of"),
    # The classes are JAX's: a TypeError where its lax shape rule raises.
    (lambda x: jnp.transpose(x, (0, 1)), TypeError, "don't match"),
    (lambda x: jnp.squeeze(x, 0), ValueError, "size not equal to one"),
    (lambda x: jnp.concatenate([x, x[0]]), TypeError, "same number of dimensions"),
    (lambda x: jnp.concatenate([x, x[:, :1, :2]], axis=1), TypeError, "must match exactly"),
    (lambda x: jnp.stack([x, x[0]]), ValueError, "same shape"),
    (lambda x: jnp.broadcast_to(x, (3, 4)), ValueError, "Incompatible shapes"),
    (lambda x: jnp.swapaxes(x, 0, 3), IndexError, "axis 3"),
    (lambda x: jnp.moveaxis(x, 0, -4), ValueError, "axis -4"),
    (lambda x: jnp.tril(x[0, 0]), ValueError, "at least 2-dimensional"),
    (lambda x: jnp.take(x, np.array([1.5])), TypeError, "integers"),
    (lambda x: jnp.sort(x, order="f"), TypeError, "order"),
])
def test_shape_errors(call, error, match):
    with pytest.raises(error, match=match):
        plax.make_jaxpr(call)(X)


def test_broadcast_shapes_and_arrays():
    assert jnp.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    with pytest.raises(ValueError, match=r"shapes=\[\(2,\), \(3,\)\]"):
        jnp.broadcast_shapes((2,), (3,))
    a, b = plax.make_jaxpr(lambda u, v: jnp.broadcast_arrays(u, v))(
        np.ones((2, 1), np.float32), np.ones(3, np.int32)).out_avals
    assert a.shape == b.shape == (2, 3) and b.dtype == np.int32


def test_inspection_functions():
    assert jnp.ndim(X) == 3 and jnp.shape(X) == (2, 3, 4) and jnp.size(X, 1) == 3
    assert jnp.size(2.0) == 1 and jnp.isscalar(1.5) and jnp.isscalar(np.float32(1))
    assert not jnp.isscalar(X) and not jnp.isscalar("text")
    # JAX 0.10.2 still answers for lists here, with a DeprecationWarning (NumPy's answer)
    for fn, want in ((jnp.ndim, 2), (jnp.shape, (2, 1)), (jnp.size, 2)):
        with pytest.warns(DeprecationWarning, match="In a future JAX release this will be "
                                                    "an error"):
            assert fn([[1], [2]]) == want


def test_size_takes_a_tuple_of_axes():
    assert jnp.size(X, axis=(0, 2)) == 8 and jnp.size(X, [-1]) == 4 and jnp.size(X, ()) == 1
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        jnp.size(X, (1, -2))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.size(X, (0, 3))
    with pytest.raises(TypeError, match="axis must be an integer, got 1.5"):
        jnp.size(X, 1.5)


def test_traced_repeat_counts_with_a_total_length():
    # the counts are known only at run time; the result is cut or padded with the last
    # element as for concrete counts
    repeat = plax.jit(lambda x, r: jnp.repeat(x, r, axis=1, total_repeat_length=7))
    for counts in ([1, 2, 0], [0, 3, 1], [4, 4, 4], [0, 0, 0]):
        np.testing.assert_array_equal(
            repeat(M, np.array(counts)),
            jnp.repeat(M, np.array(counts), axis=1, total_repeat_length=7))
    np.testing.assert_array_equal(  # one count for every element
        plax.jit(lambda r: jnp.repeat(M[0], r, total_repeat_length=5))(2), [3, 3, 1, 1, 2])
    grad = plax.grad(lambda x, r: jnp.repeat(x, r, total_repeat_length=4).sum())
    np.testing.assert_array_equal(plax.jit(grad)(np.ones(3, np.float32), np.array([1, 0, 3])),
                                  [1.0, 0.0, 3.0])
    with pytest.raises(plax.errors.ConcretizationTypeError, match="total_repeat_length"):
        plax.jit(lambda r: jnp.repeat(M, r, axis=0))(np.array([1, 2, 0, 1]))
    with pytest.raises(ValueError):  # counts that do not match the axis
        plax.jit(lambda r: jnp.repeat(M, r, axis=0, total_repeat_length=3))(np.ones(3, int))


def test_total_repeat_length_cuts_or_pads_with_the_operands_last_element():
    # JAX's answers: the fill is the operand's last element along the axis, even where
    # its own count is zero
    a = np.array([[0, 1, 2], [3, 4, 5]])
    cases = [((a, np.array([1, 2, 0]), 1, 5), [[0, 1, 1, 2, 2], [3, 4, 4, 5, 5]]),
             ((a[0], np.array([0, 0, 0]), None, 2), [2, 2]),
             ((a[0], np.array([1, 2, 1]), None, 3), [0, 1, 1]),
             ((a[0], 2, None, 8), [0, 0, 1, 1, 2, 2, 2, 2])]
    for (x, repeats, axis, total), expected in cases:
        np.testing.assert_array_equal(
            jnp.repeat(x, repeats, axis=axis, total_repeat_length=total), expected)


def test_repeat_counts_must_be_arrays_or_scalars_as_in_jax():
    # JAX refuses a Python list or tuple of counts (NumPy takes them)
    for repeats in ([1, 2, 0], (1, 2, 0)):
        with pytest.raises(TypeError, match="repeat requires ndarray or scalar arguments, "
                                            f"got {type(repeats).__name__} at position 1"):
            jnp.repeat(jnp.arange(3), repeats)
    np.testing.assert_array_equal(jnp.repeat(jnp.arange(3), jnp.array([1, 2, 0])), [0, 1, 1])


def test_repeat_of_a_scalar_takes_any_axis_and_negative_repeats_are_shape_errors():
    # JAX repeats a scalar along its own (flattened) axis whatever `axis` says.
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(jnp.repeat(jnp.uint32(3), 3, axis=axis), [3, 3, 3])
    with pytest.raises(TypeError):
        jnp.repeat(jnp.uint32(3), 3, axis=1.5)
    # A negative count is a negative dimension: NumPy's ValueError, JAX's TypeError.
    for repeats in (-1, np.array([1, -1, 2])):
        with pytest.raises(ValueError, match="negative"):
            jnp.repeat(jnp.zeros((3, 4)), repeats, axis=0)
        with pytest.raises(TypeError, match="negative"):
            jnp.repeat(jnp.zeros((3, 4)), repeats, axis=0)


def test_flip_of_a_repeated_axis_is_a_type_error_as_jax():
    with pytest.raises(TypeError, match="duplicates"):
        jnp.flip(jnp.zeros((3, 1, 2)), axis=(1, 1))
    with pytest.raises(TypeError, match="duplicates"):
        jnp.flip(jnp.zeros((3, 0, 2)), axis=(-2, -2, -1))
    np.testing.assert_array_equal(jnp.flip(jnp.arange(6).reshape(2, 3), axis=(0, -1)),
                                  np.flip(np.arange(6).reshape(2, 3), axis=(0, -1)))
