"""The scatter primitives: values against NumPy, shape errors, batching, and the
differentiation of gather and the scatters (against finite differences)."""
import numpy as np
import pytest

import plax
from plax import lax
from plax.extend.dtypes import float0
from plax.test_util import check_grads

ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
GATHER_ROWS = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                         start_index_map=(0,))
# Windows of 2x2 at 2-D start positions, the window dims last in the updates.
BLOCKS = lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                     scatter_dims_to_operand_dims=(0, 1))
X = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 7
DUP = np.array([[2], [0], [2]], np.int32)
UNIQUE = np.array([[2], [0]], np.int32)
U = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)


def test_values_against_numpy():
    ref = X.copy()
    np.add.at(ref, [2, 0, 2], U)
    np.testing.assert_allclose(lax.scatter_add(X, DUP, U, ROWS), ref, rtol=1e-6)
    ref = X.copy()
    ref[[2, 0]] = U[:2]
    np.testing.assert_array_equal(lax.scatter(X, UNIQUE, U[:2], ROWS), ref)
    # A 2x2 block starting at (2, 3) sticks out: dropped by default, moved in by "clip".
    starts = np.array([[0, 1], [2, 3]], np.int32)
    ones = np.ones((2, 2, 2), np.float32)
    dropped, clipped = X.copy(), X.copy()
    dropped[0:2, 1:3] += 1
    clipped[0:2, 1:3] += 1
    clipped[1:3, 2:4] += 1
    np.testing.assert_allclose(lax.scatter_add(X, starts, ones, BLOCKS), dropped, rtol=1e-6)
    np.testing.assert_allclose(lax.scatter_add(X, starts, ones, BLOCKS, mode="clip"), clipped,
                               rtol=1e-6)


def test_shape_and_dtype_errors():
    with pytest.raises(TypeError, match=r"same dtype.*float32\[3,4\].*int32\[3,4\]"):
        lax.scatter_add(X, DUP, U.astype(np.int32), ROWS)
    with pytest.raises(TypeError, match=r"last dimension of scatter_indices int32\[3,2\]"):
        lax.scatter_add(X, np.zeros((3, 2), np.int32), U, ROWS)
    with pytest.raises(TypeError, match=r"scatter dimensions of updates float32\[2,4\]"):
        lax.scatter(X, DUP, U[:2], ROWS)
    with pytest.raises(TypeError, match=r"larger than operand float32\[3,4\]"):
        lax.scatter_add(X, DUP, np.ones((3, 5), np.float32), ROWS)
    with pytest.raises(TypeError, match="scatter_add does not accept dtype bool"):
        lax.scatter_add(X > 0, DUP, U > 0, ROWS)
    with pytest.raises(ValueError, match="update_window_dims"):
        lax.scatter_add(X, DUP, U, ROWS._replace(update_window_dims=(2,)))
    with pytest.raises(TypeError, match="ScatterDimensionNumbers"):
        lax.scatter_add(X, DUP, U, (1, 0, 0))
    with pytest.raises(TypeError, match=r"gather does not accept dtype float0.*float0\[3,4\]"):
        lax.gather(np.zeros((3, 4), float0), DUP, GATHER_ROWS, (1, 4))


def test_gather_derivatives():
    for mode in ("clip", "fill"):
        check_grads(lambda x: lax.gather(x, np.array([[2], [0], [2], [5]], np.int32),
                                         GATHER_ROWS, (1, 4), mode=mode, fill_value=0.0),  # noqa: B023 (run at once)
                    (X,), order=2)
    g = plax.grad(lambda x: lax.reduce_sum(lax.gather(x, DUP, GATHER_ROWS, (1, 4)), (0, 1)))(X)
    np.testing.assert_array_equal(g, np.array([1, 0, 2], np.float32)[:, None] * np.ones(4))


def test_scatter_derivatives():
    check_grads(lambda x, u: lax.scatter_add(x, DUP, u, ROWS), (X, U), order=2)
    check_grads(lambda x, u: lax.scatter(x, UNIQUE, u, ROWS, unique_indices=True),
                (X, U[:2]), order=2)
    # Duplicate indices: the derivative follows the update that won.
    check_grads(lambda x, u: lax.scatter(x, DUP, u, ROWS), (X, U), order=2)
    check_grads(lambda x: lax.scatter_mul(x, DUP, U, ROWS), (X,), order=2)
    check_grads(lambda x, u: lax.scatter_mul(x, UNIQUE, u, ROWS, unique_indices=True),
                (X, U[:2]), order=2)
    # min/max: distinct values, so no ties (where the derivative jumps).
    distinct = np.random.default_rng(0).permutation(24).astype(np.float32) / 5
    x, u = distinct[:12].reshape(3, 4), distinct[12:].reshape(3, 4)
    for f in (lax.scatter_min, lax.scatter_max):
        check_grads(lambda x, u, f=f: f(x, DUP, u, ROWS), (x, u), order=2)
    # A tie shares the derivative between the operand's row 2 and the update, row 0
    # (which also reaches the result as itself).
    tie = plax.grad(lambda x: lax.reduce_sum(lax.scatter_max(x, UNIQUE[:1], x[:1], ROWS),
                                             (0, 1)))(np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(tie, np.array([1.5, 1, 0.5], np.float32)[:, None] * np.ones(4))


def test_batching_matches_a_loop():
    xs, us = np.stack([X, -X]), np.stack([U, 2 * U])
    idx = np.stack([DUP, DUP[::-1]])
    out = plax.vmap(lambda x, i, u: lax.scatter_add(x, i, u, ROWS))(xs, idx, us)
    ref = [lax.scatter_add(xs[k], idx[k], us[k], ROWS) for k in range(2)]
    np.testing.assert_allclose(out, np.stack(ref), rtol=1e-6)
    out = plax.vmap(lambda i: lax.scatter(X, i, U[:2], ROWS), in_axes=0)(
        np.stack([UNIQUE, UNIQUE[::-1]]))
    np.testing.assert_array_equal(out[1], lax.scatter(X, UNIQUE[::-1], U[:2], ROWS))


def test_per_example_gradients_of_dynamic_slice_with_batched_indices():
    def f(x, i):
        window = lax.dynamic_slice(x, (i, 1), (2, 2))
        return lax.reduce_sum(lax.mul(lax.sin(window), lax.index_in_dim(x[0], 0, 0, False)),
                              (0, 1))

    xs = np.stack([X, X[::-1]])
    starts = np.array([1, -1], np.int32)
    per_example = plax.vmap(plax.grad(f))(xs, starts)
    loop = np.stack([plax.grad(f)(xs[k], starts[k]) for k in range(2)])
    np.testing.assert_allclose(per_example, loop, rtol=1e-6)
    shared = plax.vmap(plax.grad(f), in_axes=(None, 0))(X, starts)
    loop = np.stack([plax.grad(f)(X, s) for s in starts])
    np.testing.assert_allclose(shared, loop, rtol=1e-6)
