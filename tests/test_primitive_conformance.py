"""Every standard primitive (plax-stdlib's, plax-transforms' and plax-sharding's, the
sharding ones on the 8 virtual devices) through `plax.test_util.check_primitive`: its rules
checked against each other (abstract eval vs the implementation, jit vs eager, jvp
and vjp vs finite differences, transpose by the dot-product test, vmap vs a loop
for every in_axes combination, each declared dtype).

Each example is written as a call of the public function (`lax.sin(x)`), traced
with `make_jaxpr`; the primitive's equation gives the operands and parameters
(`applied`). Values of `lax.<fn>` against NumPy are tests/test_lowering.py's job.
A check a primitive's rules call for but no example runs fails
`test_every_rule_is_checked`, unless `SKIPPED` (or, for a whole primitive,
`EXEMPT`) says why.
"""
from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
import pytest
from matrix_samples import hermitian_pd
from test_lowering import BOOL, C64, F32, F64, I32, U8, sample

import plax
import plax.experimental
import plax.ffi
import rms_norm  # noqa: F401  (registers the example FFI kernel's targets)
from plax import lax
from plax.experimental import pallas
from plax.experimental.compute_on import compute_on2
from plax.experimental.custom_partitioning import custom_partitioning
from plax.experimental.layout import Layout, with_layout_constraint
from plax.experimental.shard_alike import shard_alike
from plax.experimental.xla_metadata import set_xla_metadata
from plax.lax import linalg
from plax.sharding import Mesh, NamedSharding, PartitionSpec
from plax.extend import list_primitives, lookup
from plax.extend.batching import extend_axis_env
from plax.extend.core import Literal, Primitive, ShapedArray
from plax.test_util import check_primitive
from plax_stdlib.random import gamma_samplers as _gamma, key_primitives as _keys
from plax_stdlib.lax import creation as _creation
from plax_stdlib.lax.control_flow.scan_lowering import closed_call_p as _closed_call_p
from plax_stdlib.lax.select_and_scatter import select_and_scatter as _select_and_scatter
from plax_stdlib.random import threefry as _threefry

AXIS = "i"  # the named axis collectives are checked over (check_primitive binds it)


class Example(NamedTuple):
    label: str
    prim: Primitive
    args: tuple
    params: dict
    options: dict  # check_primitive's own options
    x64: bool


def applied(fn, *args, label: str = "", prim: str | None = None, x64: bool = False,
            named: bool = False, **options) -> Example:
    """The example of the primitive equation `fn(*args)` traces to (the first of
    primitive `prim`, if `fn` traces to several); equations before it are evaluated
    to give its operands."""
    with plax.enable_x64(x64), _axis_bound(named):
        closed = plax.make_jaxpr(fn)(*args)
        if prim is None and len(closed.jaxpr.eqns) != 1:
            raise AssertionError(f"{fn} traces to several equations; name the primitive:\n"
                                 f"{closed}")
        env = dict(zip(map(id, closed.jaxpr.constvars), closed.consts))
        env.update(zip(map(id, closed.jaxpr.invars), plax.tree_util.tree_leaves(args)))

        def read(atom):
            return atom.val if isinstance(atom, Literal) else env[id(atom)]

        for eqn in closed.jaxpr.eqns:
            operands = [read(a) for a in eqn.invars]
            if prim is None or eqn.primitive.name == prim:
                return Example(label or eqn.primitive.name, eqn.primitive, tuple(operands),
                               dict(eqn.params), options, x64)
            outs = eqn.primitive.bind(*operands, **eqn.params)
            for var, out in zip(eqn.outvars, outs if eqn.primitive.multiple_results
                                else [outs]):
                env[id(var)] = out
    raise AssertionError(f"{fn} applies no primitive {prim or ''}")


def _axis_bound(named: bool):
    return extend_axis_env(AXIS, 2) if named else contextlib.nullcontext()


def x(shape=(2, 3), lo=-2.0, hi=2.0, dt=F32, salt=0):
    return sample(dt, shape, lo, hi, salt)


def y(shape=(2, 3), lo=-2.0, hi=2.0, dt=F32):
    return sample(dt, shape, lo, hi, salt=1)


def unary(fn, lo=-2.0, hi=2.0, dt=F32, **options):
    return applied(fn, x(lo=lo, hi=hi, dt=dt), x64=dt in (F64, np.dtype(np.int64)), **options)


def binary(fn, lo=-2.0, hi=2.0, dt=F32, rhs=None, **options):
    return applied(fn, x(lo=lo, hi=hi, dt=dt), y(lo=lo, hi=hi, dt=dt) if rhs is None else rhs,
                   **options)


_KEYS = plax.random.split(plax.random.key(3), 3)
_COUNTS = (np.arange(6, dtype=np.uint32) * 7919, np.arange(6, dtype=np.uint32)[::-1].copy())

ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
IDX = np.array([[2], [0], [1]], np.int32)  # distinct rows: scatter's result is defined


def _scatter(fn, **options):
    return applied(lambda o, u: fn(o, IDX, u, ROWS), x((3, 4)), y((3, 4)), **options)


def _linear_solve(a, v):
    return lax.custom_linear_solve(lambda u: lax.dot(a, u), v, lambda mv, w: _solve2(a, w),
                                   lambda vm, w: _solve2(lax.transpose(a, (1, 0)), w))


def _solve2(a, w):
    """A 2x2 system solved by Cramer's rule (keeps the example free of LAPACK)."""
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    return lax.concatenate([(a[1, 1] * w[:1] - a[0, 1] * w[1:]) / det,
                            (a[0, 0] * w[1:] - a[1, 0] * w[:1]) / det], 0)


def _branch_a(v):
    return lax.sin(v) * 2.0


def _branch_b(v):
    return v * v


def _custom_jvp_fn():
    @plax.custom_jvp
    def f(v):
        return lax.sin(v) * v

    @f.defjvp
    def f_jvp(primals, tangents):
        (v,), (t,) = primals, tangents
        return f(v), (lax.cos(v) * v + lax.sin(v)) * t
    return f


def _custom_jvp_linear_fn():
    @plax.custom_jvp
    def f(v):
        return v * 2.0

    f.defjvp(lambda primals, tangents: (f(*primals), tangents[0] * 2.0))
    return f


def _custom_vmap_fn():
    @plax.custom_batching.custom_vmap
    def f(v, w):
        return lax.sin(v) * w

    @f.def_vmap
    def f_vmap(axis_size, in_batched, v, w):  # the same function, batched by hand
        v_batched, w_batched = in_batched
        if v_batched and not w_batched:
            w = lax.broadcast(w, (axis_size,))
        if w_batched and not v_batched:
            v = lax.broadcast(v, (axis_size,))
        return lax.sin(v) * w, v_batched or w_batched
    return f


def _custom_vjp_fn():
    @plax.custom_vjp
    def f(v):
        return lax.exp(v) * 0.5

    def fwd(v):
        return f(v), lax.exp(v)

    def bwd(e, ct):
        return (e * 0.5 * ct,)
    f.defvjp(fwd, bwd)
    return f


def _eye(n, dt=F32):
    return np.eye(n, dtype=dt)


def _hermitian(shape=(3, 3), dt=F32):
    a = x(shape, dt=dt)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dt)


def _projectors(v):
    """v_j v_jᴴ for each column v_j: what an eigenvector's (or singular vector's)
    phase leaves alone, and so what their derivatives are checked on."""
    return plax.numpy.einsum("...ij,...kj->...jik", v, plax.numpy.conj(v))


def _svd_invariants(s, u, vt):
    return s, _projectors(u), _projectors(plax.numpy.conj(plax.numpy.swapaxes(vt, -1, -2)))


def _argmax_pair(a, b):
    """A (value, index) argmax: a variadic reducer."""
    keep = lax.ge(a[0], b[0])
    return lax.select(keep, a[0], b[0]), lax.select(keep, a[1], b[1])


def _conv(lhs, rhs, *args, label="", **kwargs):
    return applied(lambda a, b: lax.conv_general_dilated(a, b, *args, **kwargs), lhs, rhs,
                   label=label)


MESH = Mesh(np.array(plax.devices()[:8]).reshape(2, 4), ("x", "y"))
SEEN_SHARDINGS: list = []  # inspect_array_sharding's callback
SEEN_CALLBACK_VALUES: list = []  # debug.callback's



def _scale_kernel(x_ref, o_ref):
    o_ref[...] = lax.sin(x_ref[...]) * 2

@custom_partitioning
def _rowwise_sin(v):
    return lax.sin(v)


_rowwise_sin.def_partition(
    lambda mesh, arg_shapes, result_shape: (mesh, lax.sin, arg_shapes[0].sharding,
                                            (arg_shapes[0].sharding,)),
    sharding_rule="i j -> i j")


EXAMPLES: list[Example] = [
    # arithmetic
    binary(lax.add), binary(lax.add, dt=I32, label="add_int"), binary(lax.add_any),
    binary(lax.sub), binary(lax.mul), binary(lax.mul, dt=C64, label="mul_complex"),
    binary(lax.div, rhs=y(lo=0.5, hi=2.0)), binary(lax.rem, rhs=y(lo=0.5, hi=2.0)),
    binary(lax.max), binary(lax.min),
    binary(lax.pow, lo=0.5, hi=2.0), binary(lax.atan2),
    binary(lax.nextafter),
    binary(lax.complex),
    unary(lax.neg), unary(lax.sign), unary(lax.abs), unary(lax.abs, dt=C64, label="abs_complex"),
    unary(lax.square),
    applied(lambda v: lax.integer_pow(v, 3), x()),
    applied(lambda v: lax.integer_pow(v, -2), x(lo=0.5, hi=2.0), label="integer_pow_negative"),
    # rounding and classification
    unary(lax.floor), unary(lax.ceil), unary(lax.round),
    applied(lax.is_finite, np.array([1.0, np.inf, -np.inf, np.nan, 0.5], np.float32)),
    # transcendental
    unary(lax.exp), unary(lax.exp2), unary(lax.log, lo=0.5, hi=3.0),
    unary(lax.log1p, lo=-0.5, hi=2.0), unary(lax.expm1, lo=-1.0, hi=1.0),
    unary(lax.logistic), unary(lax.sqrt, lo=0.5, hi=3.0), unary(lax.rsqrt, lo=0.5, hi=3.0),
    unary(lax.cbrt, lo=0.5, hi=3.0),
    unary(lax.sin), unary(lax.sin, dt=C64, label="sin_complex"), unary(lax.cos),
    unary(lax.tan, lo=-1.0, hi=1.0), unary(lax.asin, lo=-0.8, hi=0.8),
    unary(lax.acos, lo=-0.8, hi=0.8), unary(lax.atan), unary(lax.tanh), unary(lax.sinh),
    unary(lax.cosh), unary(lax.asinh), unary(lax.acosh, lo=1.2, hi=3.0),
    unary(lax.atanh, lo=-0.8, hi=0.8), unary(lax.erf), unary(lax.erfc),
    unary(lax.erf_inv, lo=-0.8, hi=0.8), unary(lax.lgamma, lo=0.5, hi=4.0),
    unary(lax.digamma, lo=0.5, hi=4.0),
    applied(lambda m, v: lax.polygamma(m, v), np.full((2, 3), 1.0, np.float32),
            x(lo=0.5, hi=4.0), nondiff_argnums=(0,)),
    # special functions (lax/special.py); derivatives in the shape parameters, which JAX
    # does not define beyond first order, are checked in tests/test_scipy_special.py
    unary(lax.bessel_i0e, lo=-5.0, hi=5.0), unary(lax.bessel_i1e, lo=-5.0, hi=5.0),
    applied(lax.zeta, x(lo=1.5, hi=4.0), y(lo=0.5, hi=3.0), nondiff_argnums=(0,)),
    applied(lax.igamma, x(lo=0.5, hi=4.0), y(lo=0.5, hi=4.0), nondiff_argnums=(0,)),
    applied(lax.igammac, x(lo=0.5, hi=4.0), y(lo=0.5, hi=4.0), nondiff_argnums=(0,)),
    applied(lax.igamma_grad_a, x(lo=0.5, hi=4.0), y(lo=0.5, hi=4.0), nondiff_argnums=(0,)),
    applied(lax.betainc, x(lo=0.5, hi=4.0), y(lo=0.5, hi=4.0), x(lo=0.1, hi=0.9, salt=2),
            nondiff_argnums=(0, 1)),
    # complex parts
    unary(lax.real, dt=C64), unary(lax.imag, dt=C64), unary(lax.conj, dt=C64),
    # bitwise
    binary(lax.bitwise_and, dt=I32), binary(lax.bitwise_or, dt=I32),
    binary(lax.bitwise_xor, dt=BOOL), unary(lax.bitwise_not, dt=U8),
    binary(lax.shift_left, dt=I32, rhs=sample(I32, (2, 3), 0, 31, salt=1)),
    binary(lax.shift_right_logical, dt=I32, rhs=sample(I32, (2, 3), 0, 31, salt=1)),
    binary(lax.shift_right_arithmetic, dt=I32, rhs=sample(I32, (2, 3), 0, 31, salt=1)),
    unary(lax.population_count, dt=I32, lo=-50, hi=100), unary(lax.clz, dt=I32, lo=0, hi=100),
    # comparisons and selection
    binary(lax.eq), binary(lax.ne), binary(lax.lt), binary(lax.le), binary(lax.gt),
    binary(lax.ge),
    applied(lax.select_n, sample(BOOL, (2, 3), salt=2), x(), y()),
    applied(lax.select_n, sample(I32, (2, 3), 0, 1, salt=2), x(), y(), label="select_n_int32"),
    applied(lambda lo, v, hi: lax.clamp(lo, v, hi), np.float32(-1.0), x(), np.float32(1.0)),
    # conversions
    applied(lambda v: lax.convert_element_type(v, np.float64), x(), x64=True),
    applied(lambda v: lax.convert_element_type(v, np.int32), x(), label="convert_to_int"),
    applied(lambda v: lax.convert_element_type(v, np.float32), x(dt=I32),
            label="convert_from_int"),
    applied(lambda v: lax.convert_element_type(v, np.complex64), x(), label="convert_to_complex"),
    applied(lambda v: lax.bitcast_convert_type(v, np.int32), x()),
    applied(lambda v: lax.bitcast_convert_type(v, np.uint8), x(), label="bitcast_narrower"),
    applied(lax.copy_p.bind, x()), applied(lax.stop_gradient, x()),
    applied(lambda v: plax.ad_checkpoint.checkpoint_name(v, "h"), x()),
    # indexing
    applied(lambda o: lax.gather(o, np.array([[2], [0], [2]], np.int32),
                                 lax.GatherDimensionNumbers(offset_dims=(1,),
                                                            collapsed_slice_dims=(0,),
                                                            start_index_map=(0,)), (1, 4)),
            x((3, 4)), prim="gather"),
    _scatter(lax.scatter_add),
    _scatter(lambda o, i, u, d: lax.scatter_mul(o, i, u, d, unique_indices=True)),
    _scatter(lax.scatter_min), _scatter(lax.scatter_max),
    _scatter(lambda o, i, u, d: lax.scatter(o, i, u, d, unique_indices=True)),
    # creation
    applied(lambda: lax.broadcasted_iota(np.int32, (2, 4), 1)),
    applied(lambda: _creation.empty_like_aval(ShapedArray((2, 3), np.float32)), prim="empty2"),
    # cumulative
    applied(lambda v: lax.cumsum(v, 0), x((3, 2))),
    applied(lambda v: lax.cumsum(v, 1, reverse=True), x((3, 2)), label="cumsum_reverse"),
    applied(lambda v: lax.cumprod(v, 0), x((3, 2))), applied(lambda v: lax.cummax(v, 0), x((3, 2))),
    applied(lambda v: lax.cummin(v, 1), x((3, 2))),
    applied(lambda v: lax.cumlogsumexp(v, 0), x((3, 2))),
    # contractions
    applied(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), x((2, 3)), y((3, 2))),
    applied(lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), x((2, 2, 3)),
            y((2, 3, 2)), label="dot_general_batched"),
    applied(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))), x((2, 3), dt=I32),
            y((3, 2), dt=I32), label="dot_general_int"),
    applied(lambda a, b, sa, sb: lax.scaled_dot(a, b, lhs_scale=sa, rhs_scale=sb,
                                                preferred_element_type=np.float32),
            x((2, 4)), y((4, 3)), x((2, 2), lo=0.5), y((2, 3), lo=0.5)),
    # reductions
    applied(lambda v: lax.reduce_sum(v, (1,)), x()),
    applied(lambda v: lax.reduce_prod(v, (0,)), x()),
    applied(lambda v: lax.reduce_max(v, (0, 1)), x()),
    applied(lambda v: lax.reduce_min(v, (1,)), x()),
    applied(lambda v: lax.reduce_max(v, (0, 1)), x(dt=C64), label="reduce_max_complex"),
    applied(lambda v: lax.reduce_min(v, (1,)), x(dt=C64), label="reduce_min_complex"),
    applied(lambda v: lax.reduce_and(v, (1,)), sample(BOOL, (2, 3))),
    applied(lambda v: lax.reduce_or(v, (0,)), sample(I32, (2, 3))),
    applied(lambda v: lax.reduce_xor(v, (0, 1)), sample(U8, (2, 3))),
    applied(lambda v: lax.argmax(v, 1, np.int32), x()),
    applied(lambda v: lax.argmin(v, 0, np.int32), x()),
    # shapes
    applied(lambda v: lax.broadcast_in_dim(v, (4, 2, 3), (1, 2)), x()),
    applied(lambda a, b: lax.concatenate([a, b, a], 1), x(), y((2, 1))),
    applied(lambda v, p: lax.pad(v, p, ((1, 0, 1), (-1, 2, 0))), x(), np.float32(7.0)),
    applied(lambda v: lax.reshape(v, (3, 2)), x()),
    applied(lambda v: lax.reshape(v, (6,), (1, 0)), x(), label="reshape_transposed"),
    applied(lambda v: lax.rev(v, (1,)), x()),
    applied(lambda v: lax.squeeze(v, (0, 2)), x((1, 3, 1))),
    applied(lambda v: lax.transpose(v, (2, 0, 1)), x((2, 3, 2))),
    # slicing
    applied(lambda v: lax.slice(v, (0, 1), (2, 4), (1, 2)), x((3, 4))),
    applied(lambda v, i: lax.dynamic_slice(v, (i, np.int32(1)), (2, 2)), x((3, 4)), np.int32(1),
            prim="dynamic_slice"),
    applied(lambda v, u, i: lax.dynamic_update_slice(v, u, (i, np.int32(-1))), x((3, 4)),
            y((2, 2)), np.int32(1), prim="dynamic_update_slice"),
    # sorting
    applied(lambda v: lax.sort(v, 1), x()),
    applied(lambda k, v: lax.sort_key_val(k, v, 0), x((4, 2)), y((4, 2)), label="sort_key_val"),
    applied(lambda v: lax.top_k(v, 2), x((2, 4))),
    applied(lambda v: lax.top_k(v, 1, axis=0), x((2, 4)), label="top_k_axis0"),
    applied(lambda v: lax.approx_max_k(v, 2), x((2, 4))),
    applied(lambda v: lax.approx_min_k(v, 1, reduction_dimension=0), x((2, 4)),
            label="approx_min_k"),
    applied(lambda a, b: lax.eq_to_p.bind(a, b), x(), y()),
    applied(lambda a, b: lax.le_to_p.bind(a, b), x(), y()),
    applied(lambda a, b: lax.lt_to_p.bind(a, b), x(), y()),
    # pieces and repetitions
    applied(lambda v: lax.split(v, (1, 2), 1), x()),
    applied(lambda a, b: lax.stack([a, b], 1), x(), y()),
    applied(lambda v: lax.unstack(v, 1), x()),
    applied(lambda v: lax.tile(v, (2, 1)), x()),
    _scatter(lax.scatter_sub),
    # numerics
    applied(lambda a, b: lax.optimization_barrier((a, b)), x(), y()),
    applied(lambda v: lax.reduce_precision(v, 5, 10), x()),
    binary(lax.mulhi, dt=I32, lo=-100, hi=100),
    applied(lax.stage_p.bind, x()),
    applied(lambda v: lax.platform_dependent(v, cpu=lambda a: a * 2.0, default=lax.sin), x(),
            prim="platform_index"),
    # control flow
    applied(lambda i, v: lax.switch(i, [_branch_a, _branch_b], v), np.int32(1), x(),
            prim="cond"),
    applied(lambda i, v, w: lax.switch(i, [lambda a, b: a * 2.0 - b, lambda a, b: b], v, w),
            np.int32(0), x(), y(), prim="cond", label="cond_linear"),
    applied(lambda k, v: lax.while_loop(lambda kc: kc[0] < 3,
                                        lambda kc: (kc[0] + 1, kc[1] * 0.5 + lax.sin(kc[1])),
                                        (k, v)), np.int32(0), x()),
    applied(lambda c, xs: lax.scan(lambda c, e: (c * e + 1.0, lax.sin(c)), c, xs), x((3,)),
            y((2, 3))),
    applied(lambda c, xs: lax.scan(lambda c, e: (c * 0.5 + e, c - e), c, xs), x((3,)),
            y((2, 3)), label="scan_linear"),
    # (the call of scan's body that scan's lowering stages, as JAX's does)
    applied(lambda v, w: _closed_call_p.bind(v, w, call_jaxpr=plax.make_jaxpr(
        lambda p, q: (lax.sin(p) * q, p - q))(v, w)), x(), y()),
    # The solution is differentiated through matvec's constants and b together; only b
    # moves alone (the copies of the matrix in matvec and the solvers must agree).
    applied(_linear_solve, x((2, 2)) + 3.0 * np.eye(2, dtype=F32), y((2,)),
            prim="custom_linear_solve", nondiff_argnums=(0, 1, 2)),
    # transformations that are primitives
    applied(lambda a, b: plax.jit(lambda p, q: lax.sin(p) * q)(a, b), x(), y(), prim="jit"),
    applied(plax.checkpoint(lambda v: lax.sin(lax.sin(v))), x(), prim="remat2"),
    applied(plax.checkpoint(lambda v, w: v * 3.0 - w), x(), y(), prim="remat2",
            label="checkpoint_linear"),
    applied(_custom_jvp_fn(), x(), prim="custom_jvp_call"),
    applied(_custom_jvp_linear_fn(), x(), prim="custom_jvp_call", label="custom_jvp_linear"),
    applied(_custom_vjp_fn(), x(), prim="custom_vjp_call"),
    applied(_custom_vmap_fn(), x(), y(), prim="custom_vmap_call"),
    # mutable references (their writes store what is already there, so every check
    # of the same example sees the same state)
    applied(lambda r: r[1:, 0], plax.new_ref(x()), prim="get"),
    applied(lambda r, i: r[i], plax.new_ref(x()), np.int32(1), prim="get",
            label="get_dynamic"),
    applied(lambda r, v: plax.ref.swap(r, ..., v), plax.new_ref(x()), x(), prim="swap"),
    applied(lambda r, v: plax.ref.addupdate(r, 0, v), plax.new_ref(x()), np.zeros(3, F32),
            prim="addupdate"),
    applied(plax.freeze, plax.new_ref(x()), prim="freeze"),
    # a Pallas kernel in interpret mode, over a grid of two blocks
    applied(pallas.pallas_call(_scale_kernel, out_shape=plax.ShapeDtypeStruct((4,), F32),
                               grid=(2,), in_specs=[pallas.BlockSpec((2,), lambda i: (i,))],
                               out_specs=pallas.BlockSpec((2,), lambda i: (i,)),
                               interpret=True), x((4,)), prim="pallas_call"),
    # windows: the monoids (reduce_window binds them for add/max/min from the identity)
    applied(lambda v: lax.reduce_window(v, 0.0, lax.add, (2, 2), (2, 1), [(1, 0), (0, 1)],
                                        base_dilation=(1, 2), window_dilation=(2, 1)),
            x((3, 3))),
    applied(lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 1), [(1, 0), (0, 1)],
                                        base_dilation=(1, 2), window_dilation=(2, 1)),
            x((3, 3))),
    applied(lambda v: lax.reduce_window(v, np.inf, lax.min, (2, 2), (1, 2), "SAME"), x((3, 4))),
    # windows: any reducer (the initial values are its identity: no derivative in them)
    applied(lambda v: lax.reduce_window(v, 1.0, lax.mul, (2, 2), (2, 1), [(1, 0), (0, 1)],
                                        base_dilation=(1, 2), window_dilation=(2, 1)),
            x((3, 3)), nondiff_argnums=(1,)),
    applied(lambda v, i: lax.reduce_window((v, i), (-np.inf, np.int32(0)), _argmax_pair, (2, 2),
                                           (1, 1), "VALID"),
            x((3, 4)), np.arange(12, dtype=np.int32).reshape(3, 4), prim="reduce_window",
            nondiff_argnums=(2,), label="reduce_window_variadic"),
    # windows: the tangent and gradient of max/min pooling
    applied(lambda t, v: lax.select_and_gather_add(t, v, lax.ge_p, (2, 2), (1, 2),
                                                   [(1, 0), (0, 1)]), y((3, 4)), x((3, 4))),
    applied(lambda t, v: lax.select_and_gather_add(t, v, lax.le_p, (2, 2), (1, 1),
                                                   [(0, 0), (0, 0)], (2, 1), (1, 2)),
            y((3, 4)), x((3, 4)), label="select_and_gather_add_window_dilated"),
    applied(lambda t, v: lax.select_and_gather_add(t, v, lax.ge_p, (3,), (1,), [(-1, 1)], (2,)),
            y((4,)), x((4,)), label="select_and_gather_add_base_dilated"),
    applied(lambda s, v: lax.select_and_scatter_add(s, v, lax.ge_p, (2, 2), (1, 2),
                                                    [(1, 0), (0, 1)]), y((3, 2)), x((3, 4))),
    # rank 0: the result is the source whatever the operand, so it is linear in both
    # together too; only the source is a linear operand of the rule
    applied(lambda s, v: lax.select_and_scatter_add(s, v, lax.le_p, (), (), []), np.float32(2.0),
            np.float32(1.5), linear_argnums=(0,), label="select_and_scatter_add_rank0"),
    # convolutions
    _conv(x((1, 4, 3, 4)), y((2, 2, 2, 4)), (2, 1), [(1, 0), (0, 2)], lhs_dilation=(1, 2),
          rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2),
    _conv(x((2, 2, 4)), y((4, 2, 2)), (1,), "SAME", batch_group_count=2,
          label="conv_batch_groups"),
    # FFT (`lax.fft` is a jit, as JAX's: its function applies the primitive)
    applied(lambda v: lax.fft.__wrapped__(v, "ifft", (2, 3)), x((2, 2, 3), dt=C64)),
    applied(lambda v: lax.fft.__wrapped__(v, "rfft", (4,)), x((2, 4)), label="rfft"),
    applied(lambda v: lax.fft.__wrapped__(v, "irfft", (2, 5)), x((2, 3), dt=C64),
            label="irfft_odd"),
    # linear algebra (small, well-conditioned matrices; a batch dimension in some)
    applied(lambda a: linalg.cholesky(a, symmetrize_input=False), hermitian_pd(F32, (2, 3, 3)),
            prim="cholesky"),  # (then its upper triangle zeroed, as JAX's)
    applied(lambda a: linalg.cholesky(a, symmetrize_input=False), hermitian_pd(C64, (3, 3)),
            label="cholesky_complex", prim="cholesky"),
    applied(lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
            x((2, 3, 3)) + 3 * _eye(3), y((2, 3, 2))),
    applied(lambda a, b: linalg.triangular_solve(a, b, lower=False, transpose_a=True),
            x((3, 3)) + 3 * _eye(3), y((2, 3)), label="triangular_solve_right_transposed"),
    applied(lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True,
                                                 conjugate_a=True, unit_diagonal=True),
            x((3, 3), dt=C64), y((3, 2), dt=C64), label="triangular_solve_conjugate"),
    applied(lambda dl, d, du, b: linalg.tridiagonal_solve(dl, d, du, b), x((4,)),
            x((4,), salt=1) + 5, y((4,)), y((4, 2))),
    applied(linalg.lu, x((3, 2)), prim="lu"),
    applied(linalg.lu, x((2, 3), dt=C64), prim="lu", label="lu_wide_complex"),
    applied(lambda p: linalg.lu_pivots_to_permutation(p, 4),
            np.array([[2, 2, 3], [1, 3, 2]], np.int32)),
    applied(lambda a: linalg.qr(a, full_matrices=False), x((3, 2))),
    applied(lambda a: linalg.qr(a, full_matrices=False), x((2, 3), dt=C64),
            label="qr_wide_complex"),
    applied(lambda a: linalg.qr(a, pivoting=True, full_matrices=False), x((3, 3)),
            label="qr_pivoting"),
    applied(linalg.geqrf, x((3, 2))),
    applied(linalg.geqp3, x((2, 3), dt=C64), np.array([0, 1, 0], np.int32)),
    applied(linalg.householder_product, *linalg.geqrf(x((3, 2)))),
    # eigenvectors and singular vectors are defined up to a sign (real) or a phase
    # (complex): LAPACK's phase and the rule's differ, so complex ones are checked
    # through their projectors
    applied(lambda a: linalg.eigh(a, lower=False, symmetrize_input=False), _hermitian()),
    applied(lambda a: linalg.eigh(a, symmetrize_input=False), _hermitian(dt=C64),
            observe=lambda v, w: (_projectors(v), w), label="eigh_complex"),
    applied(lambda a: linalg.svd(a, full_matrices=False), x((3, 2))),
    applied(lambda a: linalg.svd(a, compute_uv=False), x((3, 2)), label="svd_values"),
    applied(lambda a: linalg.svd(a, full_matrices=False), x((2, 3), dt=C64),
            observe=_svd_invariants, label="svd_wide_complex"),
    # eig normalises eigenvectors as geev does, which the opted-in rule follows
    applied(lambda a: linalg.eig(a, enable_eigvec_derivs=True), x((3, 3))),
    applied(lambda a: linalg.eig(a, compute_left_eigenvectors=False,
                                 compute_right_eigenvectors=False), x((3, 3), dt=C64),
            label="eig_values_complex"),
    applied(linalg.schur, x((3, 3))),
    applied(linalg.hessenberg, x((3, 3), dt=C64)),
    applied(lambda a: linalg.tridiagonal(a, lower=False), _hermitian(dt=C64)),
    # sharding, on the 8 devices
    applied(lambda v: lax.with_sharding_constraint(v, NamedSharding(MESH, PartitionSpec("x", "y"))),
            x((4, 8)), prim="sharding_constraint"),
    applied(lambda v: plax.device_put(v, NamedSharding(MESH, PartitionSpec(None, "y"))),
            x((4, 8)), prim="device_put"),
    applied(lambda v: plax.debug.inspect_array_sharding(v, callback=SEEN_SHARDINGS.append),
            x((4, 8)), prim="inspect_sharding"),
    applied(lambda u, v: shard_alike(u, v), x((4, 8)), y((4, 8)), prim="shard_alike"),
    applied(_rowwise_sin, x((4, 8)), prim="custom_partitioning"),
    # annotations that leave values alone: XLA metadata, a compute space, a layout
    applied(lambda v: set_xla_metadata(v, tag="t"), x(), prim="xla_metadata_value"),
    applied(compute_on2(lambda v: lax.sin(v) * 2.0, compute_type="device_host",
                        out_memory_spaces=plax.memory.Space.Device), x(), prim="compute_on"),
    applied(compute_on2(lambda v, w: 2.0 * v - w, compute_type="device_host",
                        out_memory_spaces=plax.memory.Space.Device), x(), y(),
            prim="compute_on", label="compute_on (linear)"),
    # (eagerly it takes only Arrays, as in JAX)
    applied(lambda v: with_layout_constraint(v, Layout((0, 1))), plax.numpy.asarray(x((2, 3))),
            prim="layout_constraint"),
    # collectives, over the named axis check_primitive binds
    applied(lambda v: lax.psum(v, AXIS), x(), named=True),
    # (what psum binds in a shard_map body with check_vma, here under the named vmap)
    applied(lambda v: lax.psum_invariant_p.bind(v, axes=(AXIS,)), x(), named=True),
    applied(lambda v: lax.pmax(v, AXIS), x(), named=True),
    applied(lambda v: lax.pmin(v, AXIS), x(), named=True),
    applied(lambda: lax.axis_index(AXIS), named=True),
    applied(lambda v: lax.all_gather(v, AXIS), x(), named=True, prim="all_gather"),
    applied(lambda v: lax.all_gather(v, AXIS, to="invarying"), x(), named=True,
            prim="all_gather_invariant"),
    applied(lambda v: lax.psum_scatter(v, AXIS), x((2, 3)), named=True),
    applied(lambda v: lax.all_to_all(v, AXIS, 0, 1), x((2, 3)), named=True, prim="all_to_all"),
    applied(lambda v: lax.ppermute(v, AXIS, [(0, 1), (1, 0)]), x(), named=True),
    # (emulated under the named vmap; offsets whose flip, member 1's, does not overlap)
    applied(lambda *a: lax.ragged_all_to_all(*a, axis_name=AXIS), x((3,)), y((3,)),
            *[np.array(v, np.int32) for v in ([0, 2], [2, 1], [0, 2], [2, 1])], named=True),
    # calls out of plax: host callbacks and the example FFI kernel
    applied(lambda v: plax.pure_callback(np.sin, plax.ShapeDtypeStruct(v.shape, v.dtype), v,
                                         vmap_method="sequential"), x()),
    applied(lambda v: plax.experimental.io_callback(
        np.cos, plax.ShapeDtypeStruct(v.shape, v.dtype), v), x()),
    applied(lambda v: plax.debug.callback(SEEN_CALLBACK_VALUES.append, v), x()),
    applied(lambda v: plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct(v.shape, v.dtype),
                                        vmap_method="broadcast_all")(v, eps=np.float32(1e-5)),
            x()),
    # an exported function called back (deserialized without a VJP: the bare primitive)
    applied(lambda v: plax.export.deserialize(plax.export.export(plax.jit(lax.sin))(
        plax.ShapeDtypeStruct(v.shape, v.dtype)).serialize()).call(v), x(),
        prim="call_exported"),
    applied(lambda v: lax.ppermute(v, AXIS, [(0, 1)]), x(), named=True, label="ppermute_partial"),
    applied(lambda v: lax.pbroadcast(v, AXIS, 1), x(), named=True),
    applied(lambda v: lax.pvary(v, AXIS), x(), named=True),
    # shard_map on the 8 devices: a linear body with a collective over one mesh axis
    applied(plax.shard_map(lambda b: 2.0 * b + lax.psum(b, "x"), mesh=MESH,
                           in_specs=PartitionSpec("x", "y"), out_specs=PartitionSpec("x", "y")),
            x((4, 8)), prim="shard_map"),
    # The PRNG's primitives: key arrays of three keys (batched by flipping them).
    applied(lambda k1, k2, c1, c2: _threefry.threefry2x32(k1, k2, c1, c2, rolled=True),
            np.uint32(7), np.uint32(9), *_COUNTS, label="threefry2x32 (rolled on CPU)"),
    applied(lambda k1, k2, c1, c2: _threefry.threefry2x32(k1, k2, c1, c2, rolled=False),
            np.uint32(7), np.uint32(9), *_COUNTS, label="threefry2x32 (unrolled)"),
    applied(lambda: _threefry.iota_2x32_shape((2, 3))),
    applied(lambda s: _keys.random_seed(s, _KEYS.dtype._impl), np.arange(3, dtype=np.int32)),
    applied(lambda k: _keys.random_split(k, (2,)), _KEYS),
    applied(lambda k, m: _keys.random_fold_in(k, m), _KEYS, np.arange(3, dtype=np.uint32)),
    applied(lambda k: _keys.random_bits(k, 16, (2,)), _KEYS),
    applied(lambda d: _keys.random_wrap(d, _KEYS.dtype._impl), _COUNTS[0].reshape(3, 2)),
    applied(_keys.random_unwrap, _KEYS),
    applied(plax.random.clone, _KEYS),
    applied(lambda k, a: _gamma.random_gamma_p.bind(k, a, log_space=True), _KEYS,
            np.array([0.5, 1.5, 4.0], np.float32)),
    applied(lambda k: lax.rng_bit_generator(k, (2, 3))[1], _COUNTS[0][:4],
            prim="rng_bit_generator"),
    applied(lambda v: lax.reduce(v, np.float32(1), lambda a, b: a * b + np.float32(0), (1,)),
            x((2, 3)), nondiff_argnums=(1,), label="reduce (general)"),
    applied(lambda v, s: _select_and_scatter(v, lax.ge, (1, 2), (1, 1), ((0, 0), (0, 0)), s,
                                             np.float32(0), lax.add), x((2, 3)), x((2, 2))),
    # a composite: its rules are its decomposition's (with a closed-over constant)
    applied(lax.composite(lambda v, w, **_: lax.sin(v) * w + np.float32(0.5), name="test.fma",
                          version=2), x(), x(), label="composite"),
]

# Rule-called-for checks that no example runs, and why.
EXEMPT: dict[str, str] = {
    **dict.fromkeys(("checkify.check", "checkify.check_error"),
                    "abstract evaluation raises outside `checkify` by design, as in JAX (a "
                    "check must be functionalized before it is staged); tests/test_checkify.py "
                    "runs them eagerly, under checkify with jit, vmap and grad, and against JAX"),
    "ref.new_ref": "its output is a reference, not an array check_primitive can compare; "
               "its eager, jitted and traced uses are tests/test_refs.py's",
    "plax.custom_lin": "its forward evaluation raises by design (it only exists to be "
                       "transposed inside vjp of a custom_vjp function; tests/test_ad_custom.py)",
    **dict.fromkeys(("lax.create_token", "lax.after_all"),
                    "their values are tokens, which carry no data to compare; "
                    "tests/test_lax_tokens_composite.py checks them eagerly, under jit, vmap, "
                    "jvp and vjp, and their lowering against JAX's"),
    "lax.rng_uniform": "the backend's stateful generator draws a stream per program, so jit "
                       "and eager values differ by design; tests/test_lax_tokens_composite.py "
                       "checks its range, dtypes, errors and lowering against JAX's",
    "lax.dce_sink": "it has no outputs to compare (only its effect); "
                    "tests/test_lax_tokens_composite.py checks it is kept and lowered as JAX's",
    **dict.fromkeys(("lax.psend", "lax.precv"),
                    "Send/Recv lower only for GPUs (NotImplementedError elsewhere, as in JAX); "
                    "tests/test_ragged_collectives.py compares their CUDA lowering with JAX's"),
    "lax.dimension_as_value": "a symbolic dimension has a value only in a function traced for "
                              "shape-polymorphic export; tests/test_export_shape_ops.py checks "
                              "its results there against the concrete programs' and JAX's",
}
# Checks left out for some primitives, and why: each is a decision, not a gap.
SKIPPED: dict[str, tuple[tuple[str, ...], str]] = {
    **dict.fromkeys(
        ("callbacks.pure_callback", "callbacks.io_callback", "debug.debug_callback",
         "ffi.ffi_call"),
        (("jvp", "jvp2", "transpose", "vjp"),
         "opaque calls are not differentiable by design, as in JAX (their jvp and transpose "
         "rules raise, tests/test_callbacks.py and tests/test_ffi.py check the errors); "
         "users give them derivatives with custom_jvp/custom_vjp")),
    "export.call_exported": (
        ("jvp", "jvp2", "transpose", "vjp"),
        "an Exported is differentiated through its exported VJP (a custom_vjp around the "
        "call, tests/test_export.py); the primitive's jvp rule raises by design for one "
        "deserialized without a VJP, as JAX's does"),
    "pallas.pallas_call": (("vjp",), "reverse mode of a pallas_call raises JAX's "
                           "ValueError by design (tests/test_pallas_interpret.py)"),
    "lax.while": (("transpose", "vjp"), "reverse mode of while loops raises by design "
                                        "(use scan or a fori_loop with static bounds)"),
    "lax.axis_index": (("batching",), "it takes no operands: its batching rule is what "
                                      "check_primitive's named vmap evaluates"),
    "lax.platform_index": (("batching",), "it takes no operands and has no batching rule"),
    "lax.reduce_precision": (("jvp", "jvp2", "vjp", "transpose"),
                             "rounding is treated as linear by definition (as in JAX: the "
                             "tangent is rounded too), where finite differences and the "
                             "dot-product test see a step function"),
    "lax.nextafter": (("jvp", "jvp2", "vjp"), "its jvp rule gives zero tangents, where finite "
                      "differences see the identity in x1 (JAX 0.10.2 has no jvp for it)"),
    "lax.stop_gradient": (("jvp", "jvp2", "vjp"), "its derivative is zero by definition"),
    **dict.fromkeys(
        ("lax.and", "lax.or", "lax.xor", "lax.not", "lax.shift_left", "lax.shift_right_logical",
         "lax.shift_right_arithmetic", "lax.mulhi", "random.random_seed", "random.random_split",
         "random.random_fold_in", "random.random_bits", "random.random_wrap",
         "random.random_unwrap"),
        (("jvp", "jvp2", "vjp"),
         "its operands are bools, integers or keys, whose tangents are float0 zeros that "
         "differentiation does not trace, so nothing applies its zero jvp rule (JAX's "
         "`defjvp_zero`, registered as JAX registers it: its rule tables list it)")),
    "plax.custom_vjp_call": (("jvp", "jvp2"), "forward mode of a custom_vjp function raises "
                                              "by design"),
    "random.random_gamma": (("jvp", "jvp2", "vjp"), "its derivative is the implicit "
                            "reparameterisation gradient (JAX's), d x / d a at a fixed CDF "
                            "value, not the derivative of the rejection sampler's path that "
                            "finite differences see; tests/test_random_distributions.py "
                            "checks it against SciPy's inverse incomplete gamma"),
    "lax.rng_bit_generator": (("batching",), "a batch of keys draws once, from its first key, "
                                             "as JAX's rule does: not a loop over the keys"),
    "ref.get": (("batching",), "a reference operand cannot be stacked for the vmap check; "
                               "batched references and indices: tests/test_refs_vmap_aot.py"),
    **dict.fromkeys(("ref.swap", "ref.addupdate"), (
        ("jvp", "jvp2", "vjp", "batching"),
        "differentiated writes to a reference made outside the transformation raise, as in "
        "JAX; a reference cannot be stacked for the vmap check (batched references, and JAX's "
        "error for batched writes to an unbatched one: tests/test_refs_vmap_aot.py)")),
    "layout.layout_constraint": (
        ("jvp", "jvp2", "vjp", "transpose"),
        "finite differences and the linearity probe evaluate it eagerly on NumPy values, "
        "which it refuses as JAX's does (Arrays only); it is the identity, and "
        "tests/test_layout.py checks its grad "
        "and vmap under jit against JAX"),
    "plax.custom_vmap_call": (("vjp",), "reverse mode of a custom_vmap function raises, as in "
                                        "JAX 0.10 (tests/test_custom_batching.py)"),
}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.label)
def test_check_primitive(example, checks_run):
    skip = SKIPPED.get(example.prim.id, ((), ""))[0]
    with plax.enable_x64(example.x64):
        ran = check_primitive(example.prim, *example.args, skip=skip, **example.options,
                              **example.params)
    checks_run.setdefault(example.prim.id, set()).update(c.split("[")[0].split(":")[0]
                                                         for c in ran)


@pytest.fixture(scope="module")
def checks_run() -> dict[str, set[str]]:
    return {}


def _called_for(prim: Primitive) -> set[str]:
    kinds = {r.kind for r in prim.rules()}
    wanted = {"abstract_eval"}
    if "lowering" in kinds:
        wanted.add("jit")
    if "jvp" in kinds:
        wanted |= {"jvp", "jvp2", "vjp"}
    if "transpose" in kinds:
        wanted.add("transpose")
    if "batching" in kinds:
        wanted.add("batching")
    if prim.dtypes is not None:
        wanted.add("dtypes")
    return wanted


def test_every_rule_is_checked(checks_run):
    if len(checks_run) < len({e.prim.id for e in EXAMPLES}):
        pytest.skip("needs every test_check_primitive case to have run")
    missing = {}
    for prim_id in list_primitives():
        if prim_id.startswith("tests.") or prim_id in EXEMPT:
            continue
        prim = lookup(prim_id)
        if prim.module.split(".")[0] not in ("plax_stdlib", "plax_transforms", "plax_sharding"):
            continue
        left = (_called_for(prim) - checks_run.get(prim_id, set())
                - set(SKIPPED.get(prim_id, ((), ""))[0]))
        if left:
            missing[prim_id] = sorted(left)
    assert not missing, f"checks no example runs: {missing}"


def test_exemptions_are_of_existing_primitives():
    known = set(list_primitives())
    assert set(EXEMPT) <= known
    assert set(SKIPPED) <= known

