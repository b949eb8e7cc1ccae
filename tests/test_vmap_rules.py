"""Batching rules of the lax primitives: `vmap(f, in_axes, out_axes)(*xs)` equals
`f` applied to each slice and stacked, for random shapes and axes.

Both sides are computed inside one `jit` (one compilation per example), so the
rules are exercised on a staging trace; the eager path is covered by
test_vmap_api.py.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import plax
import plax.numpy as jnp
from plax import lax
from plax.extend.core import BATCHING

RNG = np.random.default_rng(0)


def _slice(x, i, axis):
    return x if axis is None else lax.index_in_dim(x, i, axis, keepdims=False)


def assert_vmap_matches_loop(f, args, in_axes, out_axes=0, size=None):
    """vmap(f) against a Python loop over the slices, both computed in one jit
    (`size`: the axis size, given to vmap, for when no argument may be mapped)."""
    in_axes = tuple(in_axes)
    axis_size = size
    if size is None:
        size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)

    def both(*xs):
        mapped = plax.vmap(f, in_axes, out_axes, axis_size=axis_size)(*xs)
        loop = [f(*(_slice(x, i, ax) for x, ax in zip(xs, in_axes))) for i in range(size)]
        return mapped, plax.tree_util.tree_map(lambda *o: jnp.stack(o, out_axes), *loop)

    mapped, expected = plax.jit(both)(*args)
    plax.tree_util.tree_map(
        lambda m, e: np.testing.assert_allclose(np.asarray(m), np.asarray(e), rtol=1e-5,
                                                atol=1e-6), mapped, expected)


def _batched(shape, axis, size, make=None):
    """A random float32 array of per-example `shape`, batched at `axis` (or not)."""
    full = list(shape)
    if axis is not None:
        full.insert(axis % (len(shape) + 1), size)
    make = make or (lambda s: RNG.normal(size=s).astype(np.float32))
    return make(tuple(full))


shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)
sizes = st.integers(1, 3)


def in_axis(data, rank, allow_none=True):
    """An in/out axis for a per-example rank: any of [-rank-1, rank], or None."""
    choices = st.integers(-rank - 1, rank)
    return data.draw(st.one_of(st.none(), choices) if allow_none else choices)


# --- every primitive has a rule ---------------------------------------------------------

def test_every_lax_primitive_has_a_batching_rule():
    prims = [v for k, v in vars(lax).items() if k.endswith("_p")]
    exempt = {"iota",  # never has a mapped operand
              # control flow batches its bodies with batch_jaxpr; its rules come with it
              "cond", "scan", "while",
              # the backend's stateful draw has no batched form (as in JAX)
              "rng_uniform",
              # a GPU-only receive: its batched shape would be the matching send's,
              # which a rule cannot see (JAX batches it as ppermute; not built here)
              "precv"}
    missing = [p.name for p in prims if p.name not in exempt and p.get_rule(BATCHING) is None]
    assert len(prims) > 90
    assert missing == []


# --- elementwise ------------------------------------------------------------------------

UNARY = [lax.sin, lax.exp, lax.neg, lax.abs, lax.tanh, lax.floor, lax.logistic, lax.sign,
         lax.is_finite, lambda x: lax.integer_pow(x, 3),
         lambda x: lax.convert_element_type(x, np.int32), lax.stop_gradient,
         lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)]
BINARY = [lax.add, lax.sub, lax.mul, lax.div, lax.max, lax.min, lax.atan2, lax.lt, lax.eq,
          lax.nextafter, lambda x, y: lax.pow(lax.abs(x) + 0.5, y)]


@given(st.data(), shapes, sizes, st.sampled_from(UNARY))
def test_unary(data, shape, size, op):
    ax = in_axis(data, len(shape), allow_none=False)
    assert_vmap_matches_loop(op, [_batched(shape, ax, size)], [ax],
                             in_axis(data, len(shape), allow_none=False))


@given(st.data(), shapes, sizes, st.sampled_from(BINARY))
def test_binary_with_lax_broadcasting(data, shape, size, op):
    """Operands may be rank 0, or have size-1 dimensions, per example."""
    operand_shapes = [data.draw(st.sampled_from([shape, (), tuple(1 if data.draw(
        st.booleans()) else d for d in shape)])) for _ in range(2)]
    if all(s != shape for s in operand_shapes):
        operand_shapes[0] = shape
    axes = [in_axis(data, len(s)) for s in operand_shapes]
    if all(a is None for a in axes):
        axes[0] = 0
    args = [_batched(s, a, size) for s, a in zip(operand_shapes, axes)]
    assert_vmap_matches_loop(op, args, axes, in_axis(data, len(shape), allow_none=False))


def test_elementwise_batching_moves_axes_as_jax():
    """Operands batched at one position stay there; with an unbatched operand (of rank >
    0), all move to the front, as JAX's rule does (test_jaxpr_printing compares more)."""
    x = np.ones((2, 3, 4), np.float32)
    jaxpr = plax.make_jaxpr(plax.vmap(lambda a, b, c: jnp.sin(a) * b + c, in_axes=(1, 1, None),
                                      out_axes=1))(x, x, x[:, 0])
    assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == [
        "sin", "mul", "transpose", "broadcast_in_dim", "add", "transpose"]


def test_matmul_becomes_one_batched_dot_general():
    jaxpr = plax.make_jaxpr(plax.vmap(lambda a, b: a @ b))(
        np.ones((5, 2, 3), np.float32), np.ones((5, 3, 4), np.float32))
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.primitive.name == "dot_general"
    assert eqn.params["dimension_numbers"] == (((2,), (1,)), ((0,), (0,)))


@given(st.data(), shapes, sizes)
def test_select_n_and_clamp(data, shape, size):
    scalar_pred = data.draw(st.booleans())
    pred_shape = () if scalar_pred else shape
    axes = [in_axis(data, len(pred_shape)), in_axis(data, len(shape)),
            in_axis(data, len(shape))]
    if all(a is None for a in axes):
        axes[1] = 0
    pred = _batched(pred_shape, axes[0], size, lambda s: RNG.random(s) > 0.5)
    lo_axis = in_axis(data, 0)
    lo = _batched((), lo_axis, size, lambda s: -np.abs(RNG.normal(size=s)).astype(np.float32))
    args = [pred, _batched(shape, axes[1], size), _batched(shape, axes[2], size), lo]
    assert_vmap_matches_loop(lambda p, x, y, lo: (lax.select(p, x, y), lax.clamp(lo, x, 0.5)),
                             args, axes + [lo_axis])


# --- reductions and other ops with axis parameters ---------------------------------------

def _axis_ops(data, shape):
    rank = len(shape)
    axis = data.draw(st.integers(0, rank - 1))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
    perm = tuple(data.draw(st.permutations(range(rank))))
    return data.draw(st.sampled_from([
        lambda x: lax.reduce_sum(x, axes), lambda x: lax.reduce_max(x, axes),
        lambda x: lax.reduce_prod(x, axes), lambda x: lax.argmax(x, axis, np.int32),
        lambda x: lax.argmin(x, axis, np.int32), lambda x: lax.cumsum(x, axis),
        lambda x: lax.cummax(x, axis, reverse=True), lambda x: lax.cumlogsumexp(x, axis),
        lambda x: lax.sort(x, axis), lambda x: lax.rev(x, axes),
        lambda x: lax.transpose(x, perm), lambda x: lax.reshape(x, (int(np.prod(shape)),)),
        lambda x: lax.reshape(x, tuple(reversed(shape)), perm),
        lambda x: lax.broadcast_in_dim(x, shape[:axis] + (2,) + shape[axis:],
                                       tuple(i + (i >= axis) for i in range(rank))),
        lambda x: lax.expand_dims(x, (axis,)),
        lambda x: lax.squeeze(lax.expand_dims(x, (axis,)), (axis,)),
        lambda x: lax.slice_in_dim(x, 0, shape[axis], 2, axis),
        lambda x: lax.pad(x, 1.5, [(1, 0, 1)] * rank),
        lambda x: lax.pad(x, 0.0, [(-1, 1, 0)] * rank),
        lambda x: lax.concatenate([x, lax.neg(x)], axis),
        lambda x: lax.sort_key_val(x, lax.neg(x), axis)[1],
    ]))


@given(st.data(), shapes, sizes)
def test_ops_with_axis_parameters(data, shape, size):
    op = _axis_ops(data, shape)
    ax = in_axis(data, len(shape), allow_none=False)
    x = _batched(shape, ax, size)
    out_rank = len(plax.eval_shape(op, x if ax is None else np.take(x, 0, ax)).shape)
    assert_vmap_matches_loop(op, [x], [ax], in_axis(data, out_rank, allow_none=False))


@given(st.data(), sizes)
def test_concatenate_and_pad_with_mixed_batching(data, size):
    axes = [in_axis(data, 2), in_axis(data, 2), in_axis(data, 0)]
    if all(a is None for a in axes):
        axes[0] = 0
    args = [_batched((2, 3), axes[0], size), _batched((2, 3), axes[1], size),
            _batched((), axes[2], size)]
    assert_vmap_matches_loop(
        lambda x, y, v: lax.pad(lax.concatenate([x, y], 1), v, [(1, 0, 1), (0, 2, 0)]),
        args, axes)


# --- dot_general -------------------------------------------------------------------------

@given(st.data(), sizes)
def test_dot_general(data, size):
    sizes_of = {"b": 2, "c": 3, "l": 2, "r": 1}
    lhs_labels = data.draw(st.permutations(
        ["b"] * data.draw(st.integers(0, 1)) + ["c"] + ["l"] * data.draw(st.integers(0, 1))))
    n_batch = lhs_labels.count("b")
    rhs_labels = data.draw(st.permutations(
        ["b"] * n_batch + ["c"] + ["r"] * data.draw(st.integers(0, 1))))
    dnums = (((lhs_labels.index("c"),), (rhs_labels.index("c"),)),
             (tuple(i for i, label in enumerate(lhs_labels) if label == "b"),
              tuple(i for i, label in enumerate(rhs_labels) if label == "b")))
    axes = [in_axis(data, len(lhs_labels)), in_axis(data, len(rhs_labels))]
    if axes == [None, None]:
        axes[data.draw(st.integers(0, 1))] = 0
    args = [_batched(tuple(sizes_of[label] for label in labels), a, size)
            for labels, a in zip((lhs_labels, rhs_labels), axes)]
    assert_vmap_matches_loop(lambda x, y: lax.dot_general(x, y, dnums), args, axes)


# --- dynamic slicing, and gather underneath ------------------------------------------------

@given(st.data(), sizes)
def test_dynamic_slice_and_update(data, size):
    shape = (4, 3)
    starts_batched = [data.draw(st.booleans()) for _ in shape]
    starts = [_batched((), 0 if b else None, size,
                       lambda s: RNG.integers(-1, 5, size=s).astype(np.int32))
              for b in starts_batched]
    start_axes = [0 if b else None for b in starts_batched]
    x_axis, u_axis = in_axis(data, 2), in_axis(data, 2)
    x, u = _batched(shape, x_axis, size), _batched((2, 2), u_axis, size)
    if x_axis is None and not any(starts_batched):
        x_axis, x = 0, _batched(shape, 0, size)
    assert_vmap_matches_loop(lambda x, u, i, j: (lax.dynamic_slice(x, (i, j), (2, 2)),
                                                 lax.dynamic_update_slice(x, u, (i, j))),
                             [x, u, *starts], [x_axis, u_axis, *start_axes])


def test_nested_vmap_of_batched_index_slicing_batches_the_gather():
    x = RNG.normal(size=(2, 3, 5)).astype(np.float32)
    starts = np.array([[0, 4, 2], [1, 3, -1]], np.int32)
    f = plax.vmap(plax.vmap(lambda x, i: lax.dynamic_slice_in_dim(x, i, 2)))
    jaxpr = plax.make_jaxpr(f)(x, starts)
    assert "gather" in [e.primitive.name for e in jaxpr.jaxpr.eqns]
    expected = [[lax.dynamic_slice_in_dim(x[a, b], int(starts[a, b]), 2) for b in range(3)]
                for a in range(2)]
    np.testing.assert_array_equal(f(x, starts), np.asarray(expected))


def test_gather_out_of_bounds_slices_by_mode():
    """As JAX's: by default indices are promised in bounds (XLA clamps the starts);
    "fill" fills the slices that stick out; "clip" clamps."""
    x = np.arange(5, dtype=np.float32)
    idx = np.array([[0], [3], [4], [-1]], np.int32)
    dnums = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                       start_index_map=(0,))
    filled = np.asarray(lax.gather(x, idx, dnums, (2,), mode="fill"))
    np.testing.assert_array_equal(filled[:2], [[0, 1], [3, 4]])
    assert np.isnan(filled[2:]).all()
    clamped = [[0, 1], [3, 4], [3, 4], [0, 1]]
    np.testing.assert_array_equal(lax.gather(x, idx, dnums, (2,), mode="clip"), clamped)
    np.testing.assert_array_equal(lax.gather(x, idx, dnums, (2,)), clamped)


# --- conversions -----------------------------------------------------------------------------

@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_bitcast_to_narrower_and_wider_dtypes(in_axis):
    x = _batched((2, 3), in_axis, 2)
    assert_vmap_matches_loop(lambda a: lax.bitcast_convert_type(a, np.int16), [x], [in_axis])
    pairs = _batched((3, 2), in_axis, 2, lambda s: RNG.integers(0, 99, s).astype(np.int16))
    assert_vmap_matches_loop(lambda a: lax.bitcast_convert_type(a, np.float32), [pairs],
                             [in_axis])
