"""Common operations on a symbolic dimension (shape-polymorphic export): slicing with
strides and negative bounds, `pad`, `reshape` with -1, `broadcast_in_dim`, `iota`/
`arange` of a symbolic size, `concatenate`, the size used as a number (`jnp.mean`,
`x.sum() / x.shape[0]`, a start index), ... Each program of `PROGRAMS` is exported
for `x: f32[b]` with `b >= 4`, each of `UNCONSTRAINED` with only JAX's implicit
`b >= 1`; its result shapes must be JAX 0.10.2's (compared in one JAX subprocess
where JAX is installed) and its results the concrete program's."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax import export

requires_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("flatbuffers") is None,
    reason="JAX (with flatbuffers, which jax.export's serialization needs) is not installed")

# Linear-algebra operands built from x: b SPD 3x3 matrices, and one b x 3 matrix of
# full rank.
_SPD_BATCH = "(x[:, None, None] * jnp.ones((3, 3)) + 4 * jnp.eye(3))"
_B_ROWS = "jnp.stack([x, x ** 2 + 1, jnp.ones_like(x)], 1)"

# name → the program's source over `x`, `jnp`, `lax` (evaluated by plax and by JAX).
PROGRAMS = {
    "slice_from_1": "x[1:]",
    "slice_to_minus_1": "x[:-1]",
    "stride_2": "x[::2]",
    "stride_3_from_1": "x[1::3]",
    "reversed": "x[::-1]",
    "reversed_stride_2": "x[-2::-2]",
    "last_two": "x[-2:]",
    "first_two": "x[:2]",
    "first_half": "x[: x.shape[0] // 2]",
    "last": "x[-1]",
    "lax_slice_strided": "lax.slice(x, (1,), (x.shape[0],), (2,))",
    "slice_in_dim": "lax.slice_in_dim(x, 1, x.shape[0], 2)",
    "pad_constant": "jnp.pad(x, 1)",
    "pad_edge": "jnp.pad(x, (2, 1), mode='edge')",
    "pad_reflect": "jnp.pad(x, (2, 1), mode='reflect')",
    "lax_pad_interior": "lax.pad(x, 0.0, [(1, 2, 1)])",
    "lax_pad_negative": "lax.pad(x, 0.0, [(-1, 0, 0)])",
    "reshape_minus_1_2": "jnp.concatenate([x, x]).reshape(-1, 2)",
    "reshape_2_minus_1": "jnp.concatenate([x, x]).reshape(2, -1)",
    "reshape_b_1_minus_1": "x.reshape(x.shape[0], 1, -1)",
    "broadcast_to": "jnp.broadcast_to(x, (3, x.shape[0]))",
    "broadcast_in_dim": "lax.broadcast_in_dim(x, (x.shape[0], 2), (0,))",
    "arange": "jnp.arange(x.shape[0]) + x",
    "arange_step": "jnp.arange(0, x.shape[0], 2)",
    "iota": "lax.iota(np.int32, x.shape[0])",
    "broadcasted_iota": "lax.broadcasted_iota(np.int32, (x.shape[0], 2), 0)",
    "concatenate": "jnp.concatenate([x, x[1:], jnp.ones(2)])",
    "stack_and_transpose": "jnp.stack([x, x], 1).T",
    "eye": "jnp.eye(x.shape[0])",
    "diag": "jnp.diag(x)",
    "argsort": "jnp.argsort(-x)",
    "expand_and_squeeze": "jnp.squeeze(x[None, :, None], (0, 2))",
    "roll": "jnp.roll(x, 1)",
    "tile_and_repeat": "jnp.tile(x, 2) + jnp.repeat(x, 2)",
    "lax_pad_symbolic_width": "lax.pad(x, 0.0, [(0, x.shape[0], 0)])",
    "lax_pad_symbolic_interior": "lax.pad(x, 0.0, [(0, 0, x.shape[0])])",
    "pad_symbolic_width": "jnp.pad(x, (x.shape[0], 1))",
    "slice_symbolic_start": "lax.slice(x, (x.shape[0] // 2,), (x.shape[0],))",
    "dynamic_slice_symbolic_size": "lax.dynamic_slice(x, (1,), (x.shape[0] - 1,))",
    # a symbolic size used as a number (its value, computed from the arguments' shapes)
    "mean": "jnp.mean(x) + x",
    "mean_keepdims": "x - jnp.mean(x, axis=0, keepdims=True)",
    "var_and_std": "jnp.var(x) + jnp.std(x, ddof=1)",
    "divide_by_size": "x.sum() / x.shape[0]",
    "size_over_values": "x.shape[0] / (x + 3)",
    "size_in_arithmetic": "x * x.shape[0] + (x.shape[0] - 1)",
    "dynamic_slice_symbolic_start": "lax.dynamic_slice(x, (x.shape[0] - 2,), (2,))",
    "dynamic_index_negative": "lax.dynamic_index_in_dim(x, -1, keepdims=False)",
    "take_negative": "jnp.take(x, jnp.array([0, -1]))",
    "getitem_negative_numpy_index": "x[np.array([1, -1])]",
    "take_fill": "jnp.take(x, jnp.array([1, 9]), mode='fill', fill_value=-5.0)",
    "grad_of_mean": "grad(lambda y: jnp.mean(y ** 2))(x)",
    "grad_of_strided_slice": "grad(lambda y: (y[1::2] ** 2).sum())(x)",
    "grad_of_pad_and_concatenate": "grad(lambda y: (jnp.pad(jnp.concatenate([y, y[2:]]), (1, 2)) "
                                   "** 2).sum())(x)",
    # --- windowed reductions and cumulative ops: a window parameter that is symbolic
    # (cumulative ops' window is the axis) lowers to stablehlo.dynamic_reduce_window
    "cumsum": "jnp.cumsum(x)",
    "cumsum_axis_1": "jnp.cumsum(jnp.concatenate([x, x]).reshape(2, -1), axis=1)",
    "cumsum_axis_0": "jnp.cumsum(jnp.concatenate([x, x]).reshape(-1, 2), axis=0)",
    "cumsum_flattened": "jnp.cumsum(jnp.stack([x, x]))",
    "cumsum_reverse": "lax.cumsum(x, reverse=True)",
    "cumprod": "jnp.cumprod(x)",
    "cummax_and_cummin": "lax.cummax(x) + lax.cummin(x, reverse=True)",
    "cumlogsumexp": "lax.cumlogsumexp(x)",
    "vmap_cumsum": "plax.vmap(jnp.cumsum)(jnp.stack([x, 2 * x]))",
    "window_sum_valid": "lax.reduce_window(x, 0., lax.add, (2,), (1,), 'VALID')",
    "window_sum_strided": "lax.reduce_window(x, 0., lax.add, (2,), (3,), 'VALID')",
    "window_product": "lax.reduce_window(x, 1., lax.mul, (2,), (1,), 'VALID')",
    "window_max_dilated": "lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), 'VALID', (2,), "
                          "(2,))",
    "max_pool_same_strided": "lax.reduce_window(x, -jnp.inf, lax.max, (3,), (2,), 'SAME')",
    "window_of_symbolic_size": "lax.reduce_window(x, 0., lax.add, (x.shape[0] // 2,), (1,), "
                               "'SAME')",
    "window_symbolic_padding": "lax.reduce_window(x, 0., lax.add, (2,), (1,), ((x.shape[0], 1),))",
    "window_symbolic_stride": "lax.reduce_window(x, 0., lax.add, (3,), (x.shape[0],), 'SAME')",
    "window_generic_pair": "lax.reduce_window((x, -x), (0., -jnp.inf), lambda a, b: (a[0] + b[0], "
                           "jnp.maximum(a[1], b[1])), (x.shape[0],), (1,), 'SAME')[1]",
    "grad_of_cumsum": "grad(lambda y: (jnp.cumsum(y) ** 2).sum())(x)",
    "grad_of_cumsum_reverse": "grad(lambda y: (lax.cumsum(y, reverse=True) ** 3).sum())(x)",
    "grad_of_max_pool": "grad(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (3,), (2,), "
                        "'SAME').sum())(x)",
    "grad_of_sum_pool": "grad(lambda y: (lax.reduce_window(y, 0., lax.add, (3,), (2,), 'SAME') "
                        "** 2).sum())(x)",
    "grad_of_window_of_symbolic_size": "grad(lambda y: (lax.reduce_window(y, 0., lax.add, "
                                       "(y.shape[0],), (1,), 'VALID') ** 2).sum())(x)",
    # --- a symbolic size as an operand of lax primitives, a loop bound, a section size,
    # the number of classes, a start or a fill value (a symbolic size reaching a
    # primitive's bind is staged as its value)
    "lax_convert_size": "lax.convert_element_type(x.shape[0], np.float32) * x",
    "lax_add_converted_size": "lax.add(x, lax.convert_element_type(x.shape[0], np.float32))",
    "lax_full_of_size": "lax.full((), x.shape[0]) + x",
    "lax_full_like_size": "lax.full_like(x, x.shape[0])",
    "lax_broadcast_size": "lax.broadcast(x.shape[0], (2,))",
    "lax_neg_size": "lax.neg(x.shape[0]) * x",
    "lax_clamp_by_size": "lax.clamp(0, jnp.arange(2 * x.shape[0]), x.shape[0])",
    "fori_loop_to_size": "lax.fori_loop(0, x.shape[0], lambda i, c: c + jnp.asarray(x)[i], 0.0)",
    "fori_loop_from_size": "lax.fori_loop(x.shape[0] - 2, x.shape[0], "
                           "lambda i, c: c + i * jnp.asarray(x)[i], 0.0)",
    "while_loop_to_size": "lax.while_loop(lambda c: c[0] < x.shape[0], "
                          "lambda c: (c[0] + 1, c[1] + jnp.asarray(x)[c[0]]), (0, 0.0))[1]",
    "vmap_of_fori_loop_to_size": "plax.vmap(lambda r: lax.fori_loop(0, x.shape[0], "
                                 "lambda i, c: c + r * i, 0.0))(x)",
    "vmap_with_size": "plax.vmap(lambda r: r * x.shape[0] "
                      "+ lax.convert_element_type(x.shape[0], np.float32))(x)",
    "scan_over_symbolic_axis": "lax.scan(lambda c, r: (c + r, c), 0.0, x)[1]",
    "scan_reverse": "lax.scan(lambda c, r: (c * 0.5 + r, c), 1.0, x, reverse=True)[1]",
    # rows of symbolic width: each step slices, and writes, a (1, b) block
    "scan_over_rows_of_symbolic_width":
        "lax.scan(lambda c, r: (c + r.sum(), r * c), 0.0, jnp.outer(x, x), reverse=True)[1]",
    "split_symbolic_sections": "jnp.stack(jnp.split(jnp.concatenate([x, 2 * x]), 2))",
    "array_split_symbolic": "jnp.stack(jnp.array_split(jnp.concatenate([x, 2 * x]), 2), 1)",
    "split_at_symbolic_index": "jnp.concatenate(jnp.split(x, [1, x.shape[0] - 1])[::-1])",
    "one_hot_size_classes": "plax.nn.one_hot(jnp.array([0, 2, 9]), x.shape[0])",
    "one_hot_size_minus_1_axis_0": "plax.nn.one_hot(jnp.arange(3), x.shape[0] - 1, axis=0)",
    "arange_symbolic_start": "jnp.arange(x.shape[0], 2 * x.shape[0])",
    "arange_symbolic_start_down": "jnp.arange(x.shape[0], 0, -2, dtype=np.float32)",
    "full_of_size": "jnp.full((x.shape[0],), x.shape[0])",
    "array_of_size": "jnp.array(x.shape[0]) * x",
    "array_of_sizes": "jnp.array([x.shape[0], 3])",
    "asarray_shape": "jnp.asarray(x.shape)",
    "ones_of_size_times_size": "jnp.ones(x.shape[0]) * x.shape[0]",
    "power_by_size": "x ** x.shape[0]",
    "repeat_total_length": "jnp.repeat(x, 2, total_repeat_length=x.shape[0] + 1)",
    "bincount_of_size_length": "jnp.bincount(jnp.array([0, 1, 1, 9]), length=x.shape[0])",
    # linear algebra: the default cutoff 10·max(b, 3)·eps is a value computed from b
    "pinv_of_b_rows": f"jnp.linalg.pinv({_B_ROWS})",
}

# name → source, exported where nothing bounds `b` but JAX's implicit `b >= 1`.
UNCONSTRAINED = {
    "slice_from_1": "x[1:]",
    "arange_of_size": "jnp.arange(x.shape[0]) * x",
    # slices whose clamps keep a symbolic max or min, strided ones gathered
    "last_two": "x[-2:]",
    "last_two_stride_2": "x[-2::2]",
    "from_5_stride_2": "x[5::2]",
    "first_three": "x[:3]",
    "all_but_last_three": "x[:-3]",
    "window_from_the_end": "x[-3:-1]",
    "reversed_to_minus_5": "x[:-5:-1]",
    "strided_in_2d": "jnp.outer(x, x)[1::2, ::-3]",
    "index_maybe_outside": "jnp.outer(x, x)[:, 1]",
    "grad_of_last_two": "grad(lambda y: (y[-2:] ** 2).sum())(x)",
    "grad_of_strided_2d": "grad(lambda y: (jnp.outer(y, y)[::2, 1:] ** 2).sum())(x)",
    # iotas of symbolic shapes inside other lowerings, and size checks that cannot decide
    "roll_static": "jnp.roll(x, 2)",
    "argmax_over_symbolic_axis": "jnp.argmax(jnp.outer(x, jnp.arange(3.0)), axis=0)",
    "tril": "jnp.tril(jnp.outer(x, x))",
    "top_k": "lax.top_k(x, 1)[0]",
    # jnp functions over a symbolic axis
    "einsum_outer": "jnp.einsum('i,j->ij', x, x)",
    "einsum_contract": "jnp.einsum('i,i->', x, x)",
    "diff": "jnp.diff(x)",
    "histogram": "jnp.histogram(x, bins=3, range=(0, 1))[0]",
    "bincount": "jnp.bincount(jnp.arange(x.shape[0]) % 3, length=3)",
    "interp": "jnp.interp(x, jnp.linspace(0, 1, 5), jnp.arange(5.0))",
    "at_set_strided": "jnp.asarray(x).at[::2].set(0.0)",
    "at_dynamic_index": "jnp.asarray(x).at[jnp.argmax(x)].add(1.0)",
    "average_weighted": "jnp.average(x, weights=jnp.ones(x.shape[0]))",
    "argmax_flat": "jnp.argmax(jnp.outer(x, x))",
    "vector_norm": "jnp.linalg.vector_norm(jnp.outer(x, x))",
    "conv_same_stride_2": "lax.conv_general_dilated(x.reshape(1, 1, -1), jnp.ones((2, 1, 3)), "
                          "(2,), 'SAME')",
    "diagonal": "jnp.diagonal(jnp.outer(x, x))",
    "trace_above": "jnp.trace(jnp.outer(x, x), offset=1)",
    "jacfwd": "plax.jacfwd(jnp.sin)(x)",
    "hessian": "plax.hessian(lambda y: (y ** 3).sum())(x)",
    # --- windowed reductions and cumulative ops (sizes as JAX: `max(d, 0)` where the
    # constraints cannot decide that a window fits)
    "cumsum": "jnp.cumsum(x)",
    "cummax_reverse": "lax.cummax(x, reverse=True)",
    "window_sum_valid": "lax.reduce_window(x, 0., lax.add, (2,), (1,), 'VALID')",
    "window_max_dilated": "lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), 'VALID', None, "
                          "(2,))",
    "grad_of_sum_pool": "grad(lambda y: (lax.reduce_window(y, 0., lax.add, (2,), (1,), 'VALID') "
                        "** 2).sum())(x)",
    "grad_of_max_pool": "grad(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (2,), (1,), "
                        "'VALID').sum())(x)",
    # --- a symbolic size as a loop bound, a section size, a start (see PROGRAMS)
    "fori_loop_to_size": "lax.fori_loop(0, x.shape[0], lambda i, c: c + jnp.asarray(x)[i], 0.0)",
    "scan_over_symbolic_axis": "lax.scan(lambda c, r: (c + r, c), 0.0, x)[1]",
    "scan_over_rows_of_symbolic_width":
        "lax.scan(lambda c, r: (c + r.sum(), r * c), 0.0, jnp.outer(x, x))[1]",
    "split_symbolic_sections": "jnp.stack(jnp.split(jnp.concatenate([x, 2 * x]), 2))",
    "one_hot_size_classes": "plax.nn.one_hot(jnp.array([0, 2]), x.shape[0])",
    "arange_symbolic_start": "jnp.arange(x.shape[0], 2 * x.shape[0])",
    # plax.random on symbolic shapes (threefry, jax_threefry_partitionable's default):
    # counters of symbolic shapes and strides, a symbolic number of keys, a symbolic size
    # folded in or as randint's bound, a select of keys of symbolic shape
    "random_normal_typed_key": "plax.random.normal(plax.random.key(0), x.shape) + x",
    "random_uniform_raw_3_by_b": "plax.random.uniform(plax.random.PRNGKey(0), (3, x.shape[0]))",
    "random_split_b": "plax.random.key_data(plax.random.split(plax.random.key(0), x.shape[0]))",
    "random_fold_in_size": "plax.random.fold_in(plax.random.PRNGKey(1), 2 * x.shape[0])",
    "random_randint_to_size": "plax.random.randint(plax.random.key(3), (4,), 0, x.shape[0])",
    "random_categorical": "plax.random.categorical(plax.random.key(1), jnp.stack([x, -x], 1))",
    "dropout": "jnp.where(plax.random.bernoulli(plax.random.key(2), 0.5, x.shape), 2 * x, 0.)",
    "random_select_keys": "plax.random.key_data(lax.select(x > 0, *plax.random.split("
                          "plax.random.key(0), (2, x.shape[0]))))",
    # linear algebra (LAPACK custom calls whose results have dynamic types) on a batch of
    # b SPD 3x3 matrices, and on one matrix of b rows (its min(b, 3) singular values;
    # LU's pivots and permutation loop over a symbolic count)
    "cholesky_of_a_batch": f"jnp.linalg.cholesky({_SPD_BATCH})",
    "eigvalsh_of_a_batch": f"jnp.linalg.eigvalsh({_SPD_BATCH})",
    "solve_with_a_batch": f"jnp.linalg.solve({_SPD_BATCH}, x[:, None, None] * jnp.ones((3, 1)))",
    "qr_of_a_batch": f"jnp.linalg.qr({_SPD_BATCH})[1]",
    "svd_of_b_rows": f"jnp.linalg.svd({_B_ROWS}, compute_uv=False)",
    "lu_permutation_of_b_rows": f"lax.linalg.lu({_B_ROWS})[2]",
}

_CONSTRAINTS = {"PROGRAMS": ["b >= 4"], "UNCONSTRAINED": []}
_SIZES = {"PROGRAMS": (4, 7), "UNCONSTRAINED": (1, 2, 5)}


def _function(source):
    return eval(f"lambda x: {source}", {"jnp": plax.numpy, "lax": plax.lax, "np": np,
                                        "grad": plax.grad, "plax": plax})


def _program(table, name):
    return _function(globals()[table][name])


@pytest.fixture(scope="module")
def exports():
    exported = {}
    for table, constraints in _CONSTRAINTS.items():
        b, = export.symbolic_shape("b", constraints=constraints)
        for name in globals()[table]:
            exported[table, name] = export.export(plax.jit(_program(table, name)))(
                plax.ShapeDtypeStruct((b,), np.float32))
    return exported


@pytest.mark.parametrize("table, name", [(table, name) for table in _CONSTRAINTS
                                         for name in sorted(globals()[table])])
def test_symbolic_program_matches_its_concrete_version(exports, table, name):
    for n in _SIZES[table]:
        x = np.linspace(-1, 2, n, dtype=np.float32)
        want = np.asarray(_program(table, name)(x))
        got = np.asarray(exports[table, name].call(x))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


_JAX_SHAPES = """
    import json, sys
    import numpy as np
    import jax
    from jax import export, lax
    import jax.numpy as jnp
    tables, constraints = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    shapes = {}
    for table, programs in tables.items():
        b, = export.symbolic_shape("b", constraints=constraints[table])
        for name, src in programs.items():
            fn = eval(f"lambda x: {src}",
                      {"jnp": jnp, "lax": lax, "np": np, "grad": jax.grad, "plax": jax})
            exp = export.export(jax.jit(fn))(jax.ShapeDtypeStruct((b,), np.float32))
            shapes[f"{table}/{name}"] = [str(a.shape) for a in exp.out_avals]
    print(json.dumps(shapes))
"""


@requires_jax
def test_symbolic_result_shapes_are_jaxs(exports):
    tables = {table: globals()[table] for table in _CONSTRAINTS}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_SHAPES),
                           json.dumps(tables), json.dumps(_CONSTRAINTS)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    jax_shapes = json.loads(proc.stdout.strip().splitlines()[-1])
    # Each JAX shape, parsed in the plax export's scope, must be the same expression
    # (JAX prints `- floordiv(b, 2) + b` where plax prints `b - floordiv(b, 2)`).
    for (table, name), exp in exports.items():
        scope = exp.in_avals[0].shape[0].scope
        parsed = [export.symbolic_shape(text[1:-1].rstrip(","), scope=scope)
                  for text in jax_shapes[f"{table}/{name}"]]
        assert [tuple(a.shape) for a in exp.out_avals] == parsed, (table, name)


def test_grad_of_a_strided_same_convolution():
    """Its transpose is a convolution with symbolic padding (`stablehlo.dynamic_conv`;
    JAX 0.10.2 raises a TypeError on this program)."""
    def loss(y):
        out = plax.lax.conv_general_dilated(y.reshape(1, 1, -1), plax.numpy.ones((2, 1, 3)),
                                            (2,), "SAME")
        return (out ** 2).sum()

    b, = export.symbolic_shape("b")
    exp = export.export(plax.jit(plax.grad(loss)))(plax.ShapeDtypeStruct((b,), np.float32))
    assert "stablehlo.dynamic_conv" in exp.mlir_module()
    for n in _SIZES["UNCONSTRAINED"]:
        x = np.linspace(-1, 2, n, dtype=np.float32)
        np.testing.assert_allclose(exp.call(x), plax.grad(loss)(x), rtol=1e-6)


# name → (source, result shape): linear algebra that JAX 0.10.2 does not export (no
# partial eigh on CPU; comparisons of b with 3 it cannot decide), exported with b >= 4.
LINALG_BEYOND_JAX = {
    "eigh_subset_of_a_batch": (f"lax.linalg.eigh({_SPD_BATCH}, subset_by_index=(1, 3))[0]",
                               "(b, 3, 2)"),
    "lstsq_of_b_rows": (f"jnp.linalg.lstsq({_B_ROWS}, x)[0]", "(3,)"),
    "matrix_rank_of_b_rows": (f"jnp.linalg.matrix_rank({_B_ROWS})", "()"),
    "grad_of_lu_of_b_rows": (f"grad(lambda x: lax.linalg.lu({_B_ROWS})[0].sum())(x)", "(b,)"),
}


@pytest.mark.parametrize("name", sorted(LINALG_BEYOND_JAX))
def test_linalg_that_jax_does_not_export_matches_its_concrete_version(name):
    source, shape = LINALG_BEYOND_JAX[name]
    fn = plax.jit(_function(source))
    b, = export.symbolic_shape("b", constraints=["b >= 4"])
    exp = export.export(fn)(plax.ShapeDtypeStruct((b,), np.float32))
    assert str(exp.out_avals[0].shape) == shape
    for n in _SIZES["PROGRAMS"]:
        x = np.linspace(-1, 2, n, dtype=np.float32)
        want = np.asarray(fn(x))
        got = np.asarray(exp.call(x))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_filled_read_at_a_static_index_that_may_lie_outside_raises():
    """`x[:, 1]` on `f32[b, c]` clamps when it runs (the index is dynamic); filling
    instead would need the index as an array, which plax asks the user for."""
    b, c = export.symbolic_shape("b, c")
    with pytest.raises(NotImplementedError, match=r"mode='fill' with a static index"):
        export.export(plax.jit(lambda x: x.at[:, 1].get(mode="fill", fill_value=-1.0)))(
            plax.ShapeDtypeStruct((b, c), np.float32))


def test_a_symbolic_size_has_a_value_only_while_exporting():
    b, = export.symbolic_shape("b")
    assert plax.lax.dimension_as_value(3) == 3
    with pytest.raises(NotImplementedError,
                       match="symbolic dimension 'b' has a value only while"):
        plax.lax.dimension_as_value(b)
    closed = plax.make_jaxpr(lambda x: x.sum() / x.shape[0])(
        plax.ShapeDtypeStruct((b,), np.float32))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "dimension_as_value"]
    assert eqn.params == {"dimension": b} and str(eqn.outvars[0].aval) == "~int32[]"


# --- windowed reductions and cumulative ops ------------------------------------------------

def test_window_reductions_use_the_dynamic_custom_call_only_where_a_parameter_is_symbolic(
        exports):
    """A symbolic window (cumsum's spans the axis) needs stablehlo.dynamic_reduce_window,
    which names its reducer, a private function; a static window over a symbolic shape
    and static shapes stay a plain stablehlo.reduce_window."""
    dynamic = exports["PROGRAMS", "cumsum"].mlir_module()
    assert "stablehlo.dynamic_reduce_window" in dynamic
    assert "called_computations = [@reduce_window_reducer]" in dynamic
    assert "func.func private @reduce_window_reducer(" in dynamic
    static_window = exports["PROGRAMS", "window_sum_valid"].mlir_module()
    assert "stablehlo.reduce_window" in static_window and "custom_call" not in \
        static_window.split("@_wrapped_jax_export_main")[1]
    static = plax.jit(plax.numpy.cumsum).lower(np.ones(3, np.float32)).as_text()
    assert "stablehlo.reduce_window" in static and "custom_call" not in static


@pytest.mark.parametrize("src", [
    "grad(lambda y: lax.cumlogsumexp(y).sum())(x)",  # JAX: no associative_scan of size b
    "grad(lambda y: (lax.reduce_window(y, 1., lax.mul, (2,), (1,), 'VALID') ** 2).sum())(x)",
])
def test_symbolic_window_derivatives_beyond_jax(src):
    """Reverse mode through windowed reductions JAX does not export (a generic reducer's
    reverse mode is plax's own), against the concrete program."""
    fn = eval(f"lambda x: {src}", {"jnp": plax.numpy, "lax": plax.lax, "grad": plax.grad})
    b, = export.symbolic_shape("b")
    exp = export.export(plax.jit(fn))(plax.ShapeDtypeStruct((b,), np.float32))
    for n in (1, 5):
        x = np.linspace(-1, 2, n, dtype=np.float32)
        np.testing.assert_allclose(exp.call(x), fn(x), rtol=1e-5)


def test_symbolic_windows_that_cannot_be_exported_are_clear_errors():
    b, = export.symbolic_shape("b", constraints=["b >= 4"])
    lax, jnp = plax.lax, plax.numpy

    def export_of(fn):
        return export.export(plax.jit(fn))(plax.ShapeDtypeStruct((b,), np.float32))
    # max pooling's gradient is a select_and_scatter, which StableHLO has only static
    with pytest.raises(NotImplementedError, match=r"select_and_scatter_add .* needs static "
                                                  r"window_dimensions.*\(floordiv\(b, 2\),\)"):
        export_of(plax.grad(lambda x: lax.reduce_window(
            x, -jnp.inf, lax.max, (x.shape[0] // 2,), (1,), "SAME").sum()))
    # the custom call's reducer is a function without the dimension variables
    with pytest.raises(NotImplementedError, match="cannot use a call of"):
        export_of(lambda x: lax.reduce_window(x, 0., plax.jit(lambda a, c: a + 2 * c),
                                              (x.shape[0],), (1,), "SAME"))
    with pytest.raises(NotImplementedError, match="cannot use the dimension variable 'b'"):
        export_of(lambda x: lax.reduce_window(x, 0., lambda a, c: a + c * x.shape[0],
                                              (x.shape[0],), (1,), "SAME"))
    # padding that may be negative (cropping) must be decided while tracing
    with pytest.raises(export.InconclusiveDimensionOperation, match="'b - 5' < '0'"):
        export_of(lambda x: lax.reduce_window(x, 0., lax.add, (2,), (1,),
                                              ((x.shape[0] - 5, 0),)))
# --- plax.random with jax_threefry_partitionable=False, and what stays static ------------

# name → source over `x: f32[b]`; their counters are runs of `b`, `2*b` and `4*b` words,
# hashed as two halves (with a zero padded where the parity of the run is open).
_ORIGINAL_THREEFRY = {
    "normal_of_odd_or_even_size": "plax.random.normal(plax.random.key(0), x.shape)",
    "split_b_raw_keys": "plax.random.split(plax.random.PRNGKey(0), x.shape[0])",
    "bits_u8_4_by_b": "plax.random.bits(plax.random.key(2), (4, x.shape[0]), np.uint8)",
    "uniform_times_x": "plax.random.uniform(plax.random.key(1), (2, x.shape[0])) * x",
}


@pytest.mark.parametrize("name", sorted(_ORIGINAL_THREEFRY))
def test_original_threefry_on_a_symbolic_size_draws_the_concrete_bits(name):
    fn = eval(f"lambda x: {_ORIGINAL_THREEFRY[name]}", {"plax": plax, "np": np})
    b, = export.symbolic_shape("b")
    with plax.threefry_partitionable(False):
        exp = export.export(plax.jit(fn))(plax.ShapeDtypeStruct((b,), np.float32))
        for n in (1, 2, 5):
            x = np.linspace(-1, 2, n, dtype=np.float32)
            np.testing.assert_array_equal(exp.call(x), fn(x))


def test_random_functions_that_need_a_constant_size_raise_as_jax():
    """Sixteen-bit draws of `b` values fill `b / 2` words, which the original threefry
    cannot decide; a shuffle's number of rounds depends on the size."""
    b, = export.symbolic_shape("b")
    spec = plax.ShapeDtypeStruct((b,), np.float32)
    key = plax.random.key(0)
    with plax.threefry_partitionable(False), pytest.raises(
            export.InconclusiveDimensionOperation, match=r"'mod\(16\*b, 32\)' > '0'"):
        export.export(plax.jit(lambda x: plax.random.bits(key, x.shape, np.uint16)))(spec)
    with pytest.raises(NotImplementedError, match="permutation .* of symbolic size b"):
        export.export(plax.jit(lambda x: plax.random.permutation(key, x)))(spec)


def test_choice_searches_probabilities_of_a_symbolic_count():
    """`choice(..., p=)` finds each draw among the cumulative probabilities by counting
    the entries below it where their number is symbolic (JAX's binary search needs it
    constant); the indices are the binary search's."""
    from plax_stdlib.random.shuffle import _search_left
    queries = np.array([-5.0, -1.0, 0.1, 0.5, 2.0, 7.0], np.float32)
    fn = plax.jit(lambda s: _search_left(s, queries))
    b, = export.symbolic_shape("b")
    exp = export.export(fn)(plax.ShapeDtypeStruct((b,), np.float32))
    for n in (1, 2, 5):
        s = np.linspace(-1, 2, n, dtype=np.float32)
        np.testing.assert_array_equal(exp.call(s), np.searchsorted(s, queries, "left"))
        np.testing.assert_array_equal(exp.call(s), fn(s))


def test_choice_from_a_symbolic_count_draws_the_concrete_values():
    """`choice(key, x.shape[0], ...)` draws from `range(b)` (JAX needs the count constant);
    without replacement it shuffles the range, which needs it constant."""
    key = plax.random.key(1)
    fn = plax.jit(lambda x: plax.random.choice(key, x.shape[0], (3,)))
    b, = export.symbolic_shape("b")
    spec = plax.ShapeDtypeStruct((b,), np.float32)
    exp = export.export(fn)(spec)
    for n in (1, 2, 5):
        x = np.zeros(n, np.float32)
        np.testing.assert_array_equal(exp.call(x), fn(x))
    with pytest.raises(export.InconclusiveDimensionOperation, match="requires a constant"):
        export.export(plax.jit(lambda x: plax.random.choice(key, x.shape[0], replace=False)))(
            spec)
