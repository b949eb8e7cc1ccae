"""`typeof(...)` on Explicit meshes against JAX (JAX in a subprocess; skipped where it
is not installed): the type of a few programs' results inside jit, of reshard's
result (under `set_mesh`), the spec of each jitted result's sharding, and which
programs both refuse."""
import importlib.util
import json
import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import run_driver_here, run_driver_in_jax
from plax.sharding import NamedSharding, PartitionSpec as P

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")

# rows 1 and 2 of a matrix, as scatter indices and dimension numbers
_ROWS = "jnp.array([[1], [2]])"
_ROW_DNUMS = "lax.ScatterDimensionNumbers((1,), (0,), (0,))"

# name: (source of a function of the arguments, [(shape, spec)] of the arguments)
PROGRAMS = {
    "sin_mul": ("lambda a, b: jnp.sin(a) * b", [((4, 8), ("x", "y")), ((4, 8), ("x", None))]),
    "row_broadcast": ("lambda a, v: a + v", [((4, 8), ("x", "y")), ((8,), ("y",))]),
    "sum0": ("lambda a: a.sum(0)", [((4, 8), ("x", "y"))]),
    "max_keepdims": ("lambda a: a.max(1, keepdims=True)", [((4, 8), ("x", "y"))]),
    "transpose": ("lambda a: a.T", [((4, 8), ("x", "y"))]),
    "matmul": ("lambda a, w: a @ w", [((4, 8), ("x", "y")), ((8, 16), ())]),
    "einsum_batch": ("lambda a, b: jnp.einsum('bij,bjk->bik', a, b)",
                     [((2, 3, 4), ("x", None, None)), ((2, 4, 8), ("x", None, "y"))]),
    "reshape_split": ("lambda a: a.reshape(2, 2, 8)", [((4, 8), ("x", "y"))]),
    "reshape_merge": ("lambda a: a.reshape(32)", [((4, 8), ("x", "y"))]),
    "broadcast_in_dim": ("lambda v: lax.broadcast_in_dim(v, (3, 8), (1,))", [((8,), ("y",))]),
    "slice": ("lambda a: a[1:3]", [((4, 8), ("x", "y"))]),
    "concatenate": ("lambda a: jnp.concatenate([a, a])", [((4, 8), ("x", "y"))]),
    "pad": ("lambda a: jnp.pad(a, ((1, 1), (0, 0)))", [((4, 8), ("x", "y"))]),
    "err_cumsum": ("lambda a: jnp.cumsum(a, 0)", [((4, 8), ("x", "y"))]),
    "reshard": ("lambda a: reshard(a, P('y', None))", [((4, 8), ("x", "y"))]),
    # on an all-Explicit mesh a constraint asserts the type
    "wsc_as_typed": ("lambda a: lax.with_sharding_constraint(a * 2, P('x', 'y'))",
                     [((4, 8), ("x", "y"))]),
    "err_wsc_other_spec": ("lambda a: lax.with_sharding_constraint(a, P('y', None))",
                           [((4, 8), ("x", "y"))]),
    "device_put": ("lambda a: device_put(a, P('y', None)) * 2", [((4, 8), ("x", "y"))]),
    "device_put_grad": ("lambda a: grad(lambda b: (device_put(b, P(None, 'y')) ** 2).sum())(a)",
                        [((4, 8), ("x", None))]),
    "device_put_jvp": ("lambda a: jvp(lambda b: device_put(b, P(None, 'x')), (a,), (a,))[1]",
                       [((4, 8), ())]),
    "err_device_put_uneven": ("lambda a: device_put(a[:3], P('x'))", [((4, 8), ())]),
    "err_conflict": ("lambda a, b: a + b", [((4, 8), ("x", "y")), ((4, 8), ("y", "x"))]),
    "err_contract": ("lambda a: a.T @ a", [((4, 8), ("x", "y"))]),
    "err_reshape": ("lambda a: a.reshape(4, 2, 4)", [((4, 8), ("x", "y"))]),
    "err_slice": ("lambda a: a[1:2]", [((4, 8), ("x", "y"))]),
    "dynamic_slice": ("lambda a: lax.dynamic_slice(a, (1, 0), (2, 8))", [((4, 8), ("x", "y"))]),
    "err_dynamic_slice": ("lambda a: lax.dynamic_slice(a, (0, 1), (4, 2))",
                          [((4, 8), ("x", "y"))]),
    "dynamic_update_slice": ("lambda a, u: lax.dynamic_update_slice(a, u, (0, 2))",
                             [((4, 8), ("x", None)), ((4, 2), ("x", None))]),
    "err_dynamic_update_slice": ("lambda a, u: lax.dynamic_update_slice(a, u, (0, 2))",
                                 [((4, 8), ("x", None)), ((4, 2), ())]),
    "take_unsplit_axis": ("lambda a: jnp.take(a, jnp.array([1, 2]), axis=0)",
                          [((4, 8), (None, "y"))]),
    "take_other_axis": ("lambda a: jnp.take(a, jnp.array([1, 2]), axis=1)",
                        [((4, 8), ("x", None))]),
    "err_take_split_axis": ("lambda a: jnp.take(a, jnp.array([1, 2]), axis=0)",
                            [((4, 8), ("x", "y"))]),
    # lax's scatters (plax.numpy's `.at[...]` flattens the operand first)
    "scatter_add": (f"lambda a, u: lax.scatter_add(a, {_ROWS}, u, {_ROW_DNUMS})",
                    [((4, 8), (None, "y")), ((2, 8), (None, "y"))]),
    "err_scatter_window_specs_differ": (
        f"lambda a, u: lax.scatter_add(a, {_ROWS}, u, {_ROW_DNUMS})",
        [((4, 8), (None, "y")), ((2, 8), ())]),
    "err_scatter_split_axis": (f"lambda a, u: lax.scatter_add(a, {_ROWS}, u, {_ROW_DNUMS})",
                               [((4, 8), ("x", "y")), ((2, 8), ())]),
    "err_scatter_updates_query_split": (
        f"lambda a, u: lax.scatter_add(a, {_ROWS}, u, {_ROW_DNUMS})",
        [((4, 8), (None, "y")), ((2, 8), ("x", "y"))]),
    "gather_batched": ("lambda a: lax.gather(a, jnp.zeros((4, 1, 1), jnp.int32), "
                       "lax.GatherDimensionNumbers((), (1,), (1,), (0,), (0,)), (1, 1))",
                       [((4, 8), ("x", None))]),
    "select_n": ("lambda a, b: lax.select_n(a > 1, a, b)", [((4, 8), ("x", "y"))] * 2),
    "err_select_n": ("lambda a, b: lax.select_n(a > 1, a, b)",
                     [((4, 8), ("x", "y")), ((4, 8), ("x", None))]),
    "clamp": ("lambda lo, a: lax.clamp(lo, a, 2.0)",
              [((4, 8), (None, "y")), ((4, 8), ("x", None))]),
    "convert": ("lambda a: a.astype(jnp.int32)", [((4, 8), ("x", "y"))]),
    "conv_batch": ("lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'SAME')",
                   [((2, 3, 4, 4), ("x", None, None, None)), ((4, 3, 3, 3), ())]),
    "conv_strided_spatial": ("lambda x, w: lax.conv_general_dilated(x, w, (2, 2), 'SAME')",
                             [((2, 3, 8, 8), (None, None, "x", None)), ((4, 3, 3, 3), ())]),
    "conv_nhwc": ("lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'VALID', "
                  "dimension_numbers=('NHWC', 'HWIO', 'NHWC'))",
                  [((2, 4, 4, 3), ("x", None, None, None)), ((3, 3, 3, 4), ())]),
    "err_conv_kernel": ("lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'SAME')",
                        [((2, 3, 4, 4), ("x", None, None, None)),
                         ((4, 3, 3, 3), ("y", None, None, None))]),
    "err_conv_feature": ("lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'SAME')",
                         [((2, 4, 4, 4), (None, "y", None, None)), ((4, 4, 3, 3), ())]),
    # pads are strict: a padded split dimension must stay divisible by its axes
    "err_pad_one_side": ("lambda a: lax.pad(a, 0., ((1, 0, 0), (0, 0, 0)))",
                         [((4, 8), ("x", "y"))]),
    "err_pad_interior": ("lambda a: lax.pad(a, 0., ((0, 0, 0), (0, 0, 1)))",
                         [((4, 8), ("x", "y"))]),
    "err_jnp_pad_odd": ("lambda a: jnp.pad(a, ((1, 0), (0, 0)))", [((4, 8), ("x", "y"))]),
    "split": ("lambda a: lax.split(a, (4, 4), axis=1)", [((4, 8), ("x", "y"))]),
    "top_k": ("lambda a: lax.top_k(a, 2)", [((4, 8), ("x", None))]),
    "err_top_k_split_axis": ("lambda a: lax.top_k(a, 2)", [((4, 8), ("x", "y"))]),
    "err_sort_split_axis": ("lambda a: jnp.sort(a, axis=1)", [((4, 8), ("x", "y"))]),
    "argsort": ("lambda a: jnp.argsort(a, axis=1)", [((4, 8), ("x", None))]),
    "reduce_window": ("lambda a: lax.reduce_window(a, 0., lax.add, (1, 2), (1, 2), 'VALID')",
                      [((4, 8), ("x", "y"))]),
    "err_reduce_window": ("lambda a: lax.reduce_window(a, 0., lax.add, (1, 3), (1, 3), "
                          "'VALID')", [((4, 8), ("x", "y"))]),
    "max_pool_grad": ("lambda a: grad(lambda b: lax.reduce_window(b, -jnp.inf, lax.max, "
                      "(2, 1), (2, 1), 'VALID').sum())(a)", [((4, 8), ("x", "y"))]),
    "max_pool_jvp": ("lambda a: jvp(lambda b: lax.reduce_window(b, -jnp.inf, lax.max, "
                     "(2, 1), (2, 1), 'VALID'), (a,), (a,))[1]", [((4, 8), ("x", "y"))]),
    "bitcast_narrower": ("lambda a: lax.bitcast_convert_type(a, jnp.uint16)",
                         [((4, 8), ("x", "y"))]),
    "bitcast_wider": ("lambda a: lax.bitcast_convert_type(a.astype(jnp.uint16), jnp.float32)",
                      [((4, 8, 2), ("x", "y"))]),
    "rfft": ("lambda a: jnp.fft.rfft(a)", [((4, 8), ("x", None))]),
    "eigh": ("lambda a: jnp.linalg.eigh(a)[0]", [((2, 4, 4), ("x", None, None))]),
    "svd": ("lambda a: jnp.linalg.svd(a)[1]", [((2, 4, 4), ("x", None, None))]),
    "scan": ("lambda a: lax.scan(lambda c, r: (c, r * 2), a[0], a)", [((4, 8), (None, "y"))]),
    "err_scan_carry_type": ("lambda a: lax.scan(lambda c, r: (c + r, r), jnp.zeros(8), a)",
                            [((4, 8), (None, "y"))]),
    "err_scan_split_xs": ("lambda a: lax.scan(lambda c, r: (c, r), a[0], a)",
                          [((4, 8), ("x", "y"))]),
    "err_cond_branch_types": ("lambda a: lax.cond(True, lambda b: b, lambda b: reshard(b, "
                              "P('y', None)), a)", [((4, 8), ("x", None))]),
    # shard_map over the Explicit mesh: in_specs inferred from the types, or checked
    "shard_map_inferred": ("lambda a: shard_map(lambda b: b * 2, out_specs=P('x', 'y'))(a)",
                           [((4, 8), ("x", "y"))]),
    "shard_map_inferred_partial": ("lambda a: shard_map(lambda b: b * 2, out_specs=P('x'), "
                                   "axis_names={'x'})(a)", [((4, 8), ("x", "y"))]),
    "shard_map_matching": ("lambda a: shard_map(lambda b: b * 2, in_specs=P('x', 'y'), "
                           "out_specs=P('x', 'y'))(a)", [((4, 8), ("x", "y"))]),
    "err_shard_map_other_spec": ("lambda a: shard_map(lambda b: b, in_specs=P('y', None), "
                                 "out_specs=P('y', None))(a)", [((4, 8), ("x", None))]),
    "err_shard_map_unsplit_spec": ("lambda a: shard_map(lambda b: b, in_specs=P(), "
                                   "out_specs=P())(a)", [((4, 8), ("x", None))]),
    "err_triangular_solve_batch": (
        "lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True)",
        [((2, 4, 4), ("x", None, None)), ((2, 4, 8), (None, None, "y"))]),
}

_DRIVER = """
    def run(programs):
        mesh = make_mesh((2, 4), ("x", "y"))
        answers = {"mesh_types": [t.name for t in mesh.axis_types]}
        for name, (source, args) in programs.items():
            fn = eval(source)
            values = [device_put(np.ones(shape, np.float32), NamedSharding(mesh, P(*spec)))
                      for shape, spec in args]
            seen = []
            def body(*a, fn=fn, seen=seen):
                out = fn(*a)
                seen.append([repr(typeof(o)) for o in tree_leaves(out)])
                return out
            try:
                with set_mesh(mesh):
                    out = jit(body)(*values)
                answers[name] = [seen[0], [repr(o.sharding.spec) for o in tree_leaves(out)]]
            except Exception as err:
                answers[name] = "error: " + type(err).__name__
        return answers
"""

_JAX_SIDE = """
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax import lax, jit, device_put, grad, jvp, make_mesh, set_mesh, shard_map, typeof
    from jax.tree_util import tree_leaves
    from jax.sharding import NamedSharding, PartitionSpec as P, reshard
""" + _DRIVER + """
    print(json.dumps(run(json.loads(sys.argv[1]))))
"""


@pytest.fixture(scope="module")
def jax_answers():
    return run_driver_in_jax(_JAX_SIDE, PROGRAMS)


@pytest.fixture(scope="module")
def plax_answers():
    return run_driver_here(_DRIVER, PROGRAMS, set_mesh=plax.set_mesh, shard_map=plax.shard_map)


@pytest.mark.parametrize("name", ["mesh_types", *PROGRAMS])
def test_types_match_jax(name, jax_answers, plax_answers):
    # errors by class name (plax's ShardingTypeError, like JAX's, subclasses TypeError)
    assert plax_answers[name] == jax_answers[name]


# --- out_sharding= on a (4, 2) Explicit mesh, eager and under jit ------------------------
# name: (source of a function of the arguments, [(shape, spec)] of the arguments). The
# arguments hold arange values (mod 7) so that values are compared too.
_CONV = "lambda a, b, **k: lax.conv_general_dilated(a, b, (1, 1), 'SAME', **k)"
_X = [((8, 4), ("x", "y"))]
_CONV_ARGS = {"batch": [((4, 2, 6, 6), ("x",)), ((4, 2, 3, 3), ())],
              "kout": [((4, 2, 6, 6), ("x",)), ((4, 2, 3, 3), ("y",))],
              "feat": [((4, 2, 6, 6), (None, "y")), ((4, 2, 3, 3), ())],
              "kin": [((4, 2, 6, 6), ("x",)), ((4, 2, 3, 3), (None, "y"))]}
_DOT, _DOT_DN = "lax.dot_general", "(((1,), (0,)), ((), ()))"
OUT_SHARDING_PROGRAMS = {
    "set0": ("lambda a: a.at[0].set(1., out_sharding=P('x', 'y'))", _X),
    "set0_unresolved": ("lambda a: a.at[0].set(1.)", _X),
    "set_rows": ("lambda a: a.at[np.array([1, 3])].set(1., out_sharding=P('x', 'y'))", _X),
    "set_rows_unresolved": ("lambda a: a.at[np.array([1, 3])].set(1.)", _X),
    "set_column": ("lambda a: a.at[:, 1].set(5., out_sharding=P('x', 'y'))", _X),
    "set_to_other_spec": ("lambda a: a.at[0].set(1., out_sharding=P(None, 'y'))", _X),
    "set_named": ("lambda a: a.at[0].set(1., out_sharding=NamedSharding(mesh, P('x', 'y')))",
                  _X),
    "set_array_values": ("lambda a: a.at[1:3].set(jnp.ones((2, 4)), out_sharding=P('x'))", _X),
    "add": ("lambda a: a.at[0].add(1., out_sharding=P('x', 'y'))", _X),
    "subtract": ("lambda a: a.at[0].subtract(1., out_sharding=P('x', 'y'))", _X),
    "multiply": ("lambda a: a.at[0].multiply(2., out_sharding=P('x', 'y'))", _X),
    "divide": ("lambda a: a.at[0].divide(2., out_sharding=P('x', 'y'))", _X),
    "power": ("lambda a: a.at[0].power(2., out_sharding=P('x', 'y'))", _X),
    "min": ("lambda a: a.at[0].min(3., out_sharding=P('x', 'y'))", _X),
    "max": ("lambda a: a.at[0].max(3., out_sharding=P('x', 'y'))", _X),
    "repeated_add": ("lambda a: a.at[np.array([1, 1, 2])].add(1., out_sharding=P('x'))", _X),
    "err_apply_takes_none": ("lambda a: a.at[0].apply(jnp.sin, out_sharding=P('x', 'y'))",
                             _X),
    "err_apply_split": ("lambda a: a.at[0].apply(jnp.sin)", _X),
    "err_apply_split_other_axis": ("lambda a: a.at[0].apply(jnp.sin)", [((8, 4), (None, "y"))]),
    # an update that leaves every split dimension whole keeps the operand's type
    "set_row_keeps_type": ("lambda a: a.at[0].set(1.)", [((8, 4), (None, "y"))]),
    "set_row_values_keep_type": ("lambda a: a.at[1].set(jnp.arange(4.))", [((8, 4), (None, "y"))]),
    "multiply_ellipsis_keeps_type": ("lambda a: a.at[..., 2, :].multiply(2.)",
                                     [((8, 4), (None, "y"))]),
    "divide_row_keeps_type": ("lambda a: a.at[2].divide(2.)", [((8, 4), (None, "y"))]),
    "set_masked_rows_keeps_type": ("lambda a: a.at[np.arange(8) % 3 == 0].set(0.)",
                                   [((8, 4), (None, "y"))]),
    "err_set_split_column": ("lambda a: a.at[:, 1].set(0.)", [((8, 4), (None, "y"))]),
    "reshape_merge": ("lambda a: jnp.reshape(a, (32,), out_sharding=P('y'))",
                      [((8, 4), (None, "y"))]),
    "reshape_method": ("lambda a: a.reshape(2, 16, out_sharding=P(None, 'y'))",
                       [((8, 4), (None, "y"))]),
    "reshape_f_order": ("lambda a: jnp.reshape(a, (4, 8), order='F', out_sharding=P('y'))",
                        [((8, 4), (None, "y"))]),
    "err_reshape_bad_kind": ("lambda a: jnp.reshape(a, (32,), out_sharding='y')", _X),
    # under vmap an example keeps its other dimensions' splits, and a laid-out result
    # gets the batch dimension split as the mapped axis is
    "vmap_get_rows": ("lambda a: lib.vmap(lambda r: r.at[np.array([1, 3])].get("
                      "out_sharding=P('y')))(a)", _X),
    "vmap_set_rows": ("lambda a: lib.vmap(lambda r: r.at[np.array([1, 3])].set(0., "
                      "out_sharding=P('y')))(a)", _X),
    "vmap_set_unsplit_dim_keeps_type": ("lambda a: lib.vmap(lambda r: r.at[1].set(0.))(a)",
                                        [((8, 4, 2), ("x", None, "y"))]),
    "err_vmap_set_split_dim": ("lambda a: lib.vmap(lambda r: r.at[0].set(0.))(a)", _X),
    "apply_replicated": ("lambda a: a.at[np.array([0, 0, 2])].apply(jnp.sin)", [((8, 4), ())]),
    "get_rows": ("lambda a: a.at[np.array([1, 3])].get(out_sharding=P(None, 'y'))", _X),
    "get_rows_unresolved": ("lambda a: a.at[np.array([1, 3])].get()", _X),
    "err_get_rows_not_divisible": (
        "lambda a: a.at[np.array([1, 3])].get(out_sharding=P('x', 'y'))", _X),
    "get_column_fill": ("lambda a: a.at[:, np.array([0, 9])].get(mode='fill', "
                        "fill_value=-1., out_sharding=P('x'))", _X),
    "getitem_rows_unresolved": ("lambda a: a[np.array([1, 3])]", _X),
    "err_take_has_none": ("lambda a: jnp.take(a, np.array([1, 3]), axis=0, "
                          "out_sharding=P(None, 'y'))", _X),
    "err_gather_has_none": ("lambda a: lax.gather(a, jnp.array([[1]]), lax.GatherDimensionNumbers("
                            "(1,), (0,), (0,)), (1, 4), out_sharding=P(None, 'y'))", _X),
    "err_scatter_has_none": ("lambda a: lax.scatter_add(a, jnp.array([[1]]), jnp.ones((1, 4)), "
                             "lax.ScatterDimensionNumbers((1,), (0,), (0,)), "
                             "out_sharding=P('x', 'y'))", _X),
    "segment_sum": ("lambda a: lib.ops.segment_sum(a, np.array([0, 1, 1, 2, 3, 3, 3, 0]), 4, "
                    "out_sharding=P(None, 'y'))", _X),
    "segment_max": ("lambda a: lib.ops.segment_max(a, np.array([0, 1, 1, 2, 3, 3, 3, 0]), 4, "
                    "out_sharding=P('x'))", _X),
    "err_segment_sum_bad_kind": ("lambda a: lib.ops.segment_sum(a, np.zeros(8, int), 4, "
                                 "out_sharding='x')", _X),
    "zeros_like_keeps_type": ("lambda a: jnp.zeros_like(a) + jnp.ones_like(a, shape=(4,))", _X),
    "err_set_bad_kind": ("lambda a: a.at[0].set(1., out_sharding='x')", _X),
    "conv_batch": (_CONV.replace("**k)", "out_sharding=P('x'))"), _CONV_ARGS["batch"]),
    "conv_batch_features": (_CONV.replace("**k)", "out_sharding=P('x', 'y'))"),
                            _CONV_ARGS["batch"]),
    "conv_replicated": (_CONV.replace("**k)", "out_sharding=P())"), _CONV_ARGS["batch"]),
    "conv_kernel_out_features": (_CONV.replace("**k)", "out_sharding=P('x', 'y'))"),
                                 _CONV_ARGS["kout"]),
    "conv_kernel_out_unresolved": (_CONV.replace(", **k)", ")"), _CONV_ARGS["kout"]),
    "conv_in_features": (_CONV.replace("**k)", "out_sharding=P(None, None, 'y'))"),
                         _CONV_ARGS["feat"]),
    "conv_in_features_unresolved": (_CONV.replace(", **k)", ")"), _CONV_ARGS["feat"]),
    "conv_kernel_in_features": (_CONV.replace("**k)", "out_sharding=P('x'))"),
                                _CONV_ARGS["kin"]),
    "conv_trailing_nones": (_CONV.replace("**k)", "out_sharding=P('x', None, None, None, "
                                                  "None))"), _CONV_ARGS["batch"]),
    "err_conv_not_divisible": (_CONV.replace("**k)", "out_sharding=P(None, None, 'x'))"),
                               _CONV_ARGS["batch"]),
    "err_conv_unknown_axis": (_CONV.replace("**k)", "out_sharding=P('z'))"),
                              _CONV_ARGS["batch"]),
    "err_conv_bad_kind": (_CONV.replace("**k)", "out_sharding='x')"), _CONV_ARGS["batch"]),
    "conv_grad_kernel": ("lambda a, b: grad(lambda b: lax.conv_general_dilated("
                         "a, b, (1, 1), 'SAME', out_sharding=P('x', 'y')).sum())(b)",
                         _CONV_ARGS["kout"]),
    "grad_sum": ("lambda a: grad(lambda a: (a * 2).sum())(a)", _X),
    "grad_softmax": ("lambda a: grad(lambda a: (lib.nn.softmax(a, axis=1) ** 2).sum())(a)",
                     [((8, 4), ("x",))]),
    "grad_take_columns": ("lambda a: grad(lambda a: jnp.take(a, np.array([0, 2]), axis=1)"
                          ".sum())(a)", [((8, 4), ("x",))]),
    "grad_where_concatenate": ("lambda a: grad(lambda a: jnp.concatenate([jnp.where(a > 0, a, "
                               "0.), a * 2], axis=1).sum())(a)", [((8, 4), ("x",))]),
    "grad_through_at_set": ("lambda a: grad(lambda a: a.at[0].set(1., out_sharding="
                            "P('x', 'y')).sum())(a)", _X),
    "grad_through_at_get": ("lambda a: grad(lambda a: a.at[np.array([1, 3])].get("
                            "out_sharding=P(None, 'y')).sum())(a)", _X),
    "grad_through_reshard": ("lambda a: grad(lambda a: reshard(a, P('y', None)).sum())(a)",
                             _X),
    "grad_nested_jit_lhs": ("lambda a, b: grad(lambda a: jit(lambda a, b: jnp.tanh(a @ b))"
                            "(a, b).sum())(a)", [((8, 4), ("x",)), ((4, 2), (None, "y"))]),
    "grad_nested_jit_rhs": ("lambda a, b: grad(lambda b: jit(lambda a, b: jnp.tanh(a @ b))"
                            "(a, b).sum())(b)", [((8, 4), ("x",)), ((4, 2), (None, "y"))]),
    "err_grad_nested_jit_contracted": (
        "lambda a, b: grad(lambda a: jit(lambda a, b: a @ b)(a, b).sum())(a)",
        [((8, 4), ("x", "y")), ((4, 2), ("y",))]),
    # vmap gives the mapped axis the mesh axes that split it in the inputs' types
    "vmap_dot": (f"lambda a: lib.vmap(lambda r: {_DOT}(r, jnp.ones((6, 2)), {_DOT_DN}, "
                 "out_sharding=P(None, 'y')))(a)", [((4, 8, 6), ("x", None, "y"))]),
    "vmap_dot_both_mapped": (f"lambda a, b: lib.vmap(lambda r, s: {_DOT}(r, s, {_DOT_DN}, "
                             "out_sharding=P(None, 'y')))(a, b)",
                             [((4, 8, 6), ("x",)), ((4, 6, 2), ("x", None, "y"))]),
    "vmap_dot_axes": (f"lambda a: lib.vmap(lambda r: {_DOT}(r, jnp.ones((6, 2)), {_DOT_DN}, "
                      "out_sharding=P(None, 'y')), in_axes=1, out_axes=1)(a)",
                      [((8, 4, 6), (None, "x"))]),
    "vmap_dot_unsplit_batch": (f"lambda a: lib.vmap(lambda r: {_DOT}(r, jnp.ones((6, 2)), "
                               f"{_DOT_DN}, out_sharding=P(None, 'y')))(a)",
                               [((4, 8, 6), (None, "x"))]),
    "vmap_dot_spmd_same_axis": (f"lambda a: lib.vmap(lambda r: {_DOT}(r, jnp.ones((6, 2)), "
                                f"{_DOT_DN}, out_sharding=P(None, 'y')), "
                                "spmd_axis_name='x')(a)", [((4, 8, 6), ("x",))]),
    "vmap_conv": ("lambda a, b: lib.vmap(lambda r: lax.conv_general_dilated(r, b, (1, 1), "
                  "'SAME', out_sharding=P(None, 'y')))(a)",
                  [((4, 2, 2, 6, 6), ("x",)), ((4, 2, 3, 3), ())]),
    "vmap_broadcast_in_dim": ("lambda a: lib.vmap(lambda r: lax.broadcast_in_dim(r, (3, 4), "
                              "(1,), out_sharding=P(None, 'y')))(a)", _X),
    "vmap_unmapped_output": ("lambda a: lib.vmap(lambda r: jnp.ones(3), out_axes=0)(a)", _X),
    "err_vmap_inconsistent_axes": ("lambda a, b: lib.vmap(lambda r, s: r + s)(a, b)",
                                   [((4, 8), ("x",)), ((4, 8), (None, "y"))]),
    "err_vmap_unmapped_split": ("lambda a, b: lib.vmap(lambda r, s: r * s, in_axes=(0, None))"
                                "(a, b)", [((4, 8), ("x",)), ((8,), ("x",))]),
    "err_vmap_spmd_other_axis": ("lambda a: lib.vmap(jnp.sin, spmd_axis_name='y')(a)",
                                 [((4, 8), ("x",))]),
    "conv_grad_replicated_kernel": ("lambda a, b: grad(lambda b: lax.conv_general_dilated("
                                    "a, b, (1, 1), 'SAME').sum())(b)", _CONV_ARGS["batch"]),
}
_OUT_SHARDING_DRIVER = """
    def run(programs):
        mesh = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
        answers = {}
        for name, (source, args) in programs.items():
            fn = eval(source, dict(globals(), mesh=mesh))
            values = [device_put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
                                 % 7 - 3, NamedSharding(mesh, P(*spec)))
                      for shape, spec in args]
            for mode in ("eager", "jit"):
                try:
                    with set_mesh(mesh):
                        out = fn(*values) if mode == "eager" else jit(fn)(*values)
                    answers[f"{name}/{mode}"] = [repr(typeof(out).sharding.spec),
                                                 repr(out.sharding.spec),
                                                 np.asarray(out).round(3).tolist()]
                except Exception as err:
                    answers[f"{name}/{mode}"] = "error: " + type(err).__name__
        return answers
"""

_OUT_SHARDING_JAX_SIDE = """
    import json, sys
    import numpy as np
    import jax as lib
    import jax.numpy as jnp
    from jax import lax, jit, grad, device_put, make_mesh, set_mesh, typeof
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P, reshard
""" + _OUT_SHARDING_DRIVER + """
    print(json.dumps(run(json.loads(sys.argv[1]))))
"""


@pytest.fixture(scope="module")
def out_sharding_answers():
    return (run_driver_in_jax(_OUT_SHARDING_JAX_SIDE, OUT_SHARDING_PROGRAMS),
            run_driver_here(_OUT_SHARDING_DRIVER, OUT_SHARDING_PROGRAMS, lib=plax,
                      set_mesh=plax.sharding.use_mesh, AxisType=plax.sharding.AxisType))


@pytest.mark.parametrize("name", OUT_SHARDING_PROGRAMS)
def test_out_sharding_matches_jax(name, out_sharding_answers):
    """The same result type, layout and values (or the same error class) as JAX."""
    jax_side, plax_side = out_sharding_answers
    for mode in ("eager", "jit"):
        want, got = jax_side[f"{name}/{mode}"], plax_side[f"{name}/{mode}"]
        if isinstance(want, str) and want.startswith("error"):
            assert isinstance(got, str), (mode, got)
            # JAX's ShardingTypeError is plax's (same name, a TypeError); JAX asserts
            # the kind of out_sharding where plax raises a TypeError
            want = {"error: AssertionError": "error: TypeError"}.get(want, want)
            assert got == want, (mode, got, want)
        else:
            assert isinstance(got, list), (mode, got)
            assert got[:2] == want[:2], mode
            np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-3, err_msg=mode)


# --- the type's sharding off explicit meshes: JAX's unsplit NamedSharding ---------------
_UNTYPED_DRIVER = """
    def run_untyped():
        x, seen = jnp.ones((2, 3)), {}
        def look(name):
            def f(y):
                seen[name] = [repr(typeof(y).sharding), repr(typeof(y))]
                return y
            return f
        seen["array"] = [repr(typeof(x).sharding), repr(typeof(x)), repr(x.aval.sharding)]
        seen["scalar"] = [repr(typeof(1.0).sharding), repr(typeof(1.0))]
        seen["numpy"] = [repr(typeof(np.ones(3, np.int32)).sharding)]
        jit(look("jit"))(x)
        vmap(look("vmap"))(x)
        grad(lambda y: look("grad")(y).sum())(x)
        closed = make_jaxpr(lambda y: y * 2)(x)
        seen["jaxpr"] = [str(closed), repr(closed.in_avals[0].sharding)]
        seen["eval_shape"] = [repr(eval_shape(lambda y: y * 2, x))]
        seen["struct"] = [repr(ShapeDtypeStruct((2,), np.float32).sharding)]
        mesh = make_mesh((2, 4), ("x", "y"))
        with set_mesh(mesh):
            typed = device_put(x, NamedSharding(mesh, P(None, None)))
            seen["explicit_eval_shape"] = [repr(eval_shape(lambda y: y * 2, typed).sharding.spec)]
            seen["explicit_unsplit"] = [repr(typeof(typed).sharding.spec),
                                        typeof(typed).sharding.mesh.empty]
        return seen
"""


# --- unreduced/reduced entries of PartitionSpecs: the spec objects and their errors -------
SPEC_CASES = {
    # one axis per set: JAX prints a set in its iteration order (plax sorts it)
    "repr": "repr(P(None, unreduced={'x'}, reduced={'y'}))",
    "reduced_attrs": "(sorted(P('x', reduced={'y'}).reduced), sorted(P('x').unreduced))",
    "eq_plain": "P('x', reduced={'y'}) == P('x')",
    "eq_empty_set": "P('x', unreduced=set()) == P('x')",
    "hash_plain": "hash(P('x', reduced={'y'})) == hash(P('x'))",
    "len": "len(P('x', reduced={'y'}))",
    "partitions": "P('x', reduced={'y'}).partitions",
    "update": "repr(P('x', reduced={'y'}).update(partitions=(None,), unreduced={'z'}))",
    "add_spec": "repr(P('x', reduced={'y'}) + P('z'))",
    "frozenset": "repr(P(unreduced=frozenset({'x'})))",
    "err_iter": "tuple(P('x', reduced={'y'}))",
    "err_getitem": "P('x', unreduced={'y'})[0]",
    "err_add_tuple": "P('x', reduced={'y'}) + ('z',)",
    "err_radd_tuple": "('z',) + P('x', reduced={'y'})",
    "err_name_not_set": "P(unreduced='x')",
    "err_tuple_not_set": "P(reduced=('x',))",
    "err_none_in_set": "P(unreduced={None})",
    "err_overlaps_partitions": "P(('x', 'y'), unreduced={'y'})",
    "err_update_overlaps": "P('x').update(reduced={'x'})",
    "err_unreduced_is_reduced": "P(unreduced={'x'}, reduced={'x'})",
    "err_axis_not_in_mesh": "NamedSharding(explicit, P('x', unreduced={'z'}))",
    "err_auto_axis": "NamedSharding(auto, P('x', unreduced={'y'}))",
    "err_auto_axis_reduced": "NamedSharding(auto, P(reduced={'y'}))",
}

_SPEC_DRIVER = """
    def run_specs(cases):
        explicit = make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
        auto = make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
        answers = {}
        for name, source in cases.items():
            try:
                answers[name] = eval(source)
            except Exception as err:
                answers[name] = "error: " + type(err).__name__
        return answers
"""


# --- cells of JAX's parallel.md (the explicit sharding tutorial) ---------------------------
_PARALLEL_DRIVER = """
    def run_parallel_cells():
        result = {}
        with set_mesh(make_mesh((4, 2), ("X", "Y"))):
            x = device_put(np.arange(16).reshape(4, 4), P("X", None))
            y = device_put(np.arange(16).reshape(4, 4), P(None, "X"))
            for name, f in [("add", lambda: x + y), ("dot", lambda: jnp.dot(x, y))]:
                try:
                    f()
                except Exception as e:  # one mesh axis on two dimensions of the result
                    result[name] = [type(e).__name__, str(e)]
        with set_mesh(make_mesh((4, 2), ("X", "Y"), (AxisType.Auto,) * 2)):
            a = device_put(jnp.arange(32.).reshape(8, 4), P(None, "X"))
            b = device_put(jnp.arange(32.).reshape(8, 4), P("X", None))
            seen = []

            @explicit_axes  # in_sharding= comes with the call
            def double(v):
                seen.append(str(typeof(v)))
                return v * 2
            out = jit(lambda v: double(v, in_sharding=P("X", "Y")) + 1)(a)
            result["explicit_axes"] = [seen, np.asarray(out).tolist()]
            wsc = lambda v: with_sharding_constraint(v * 2, P("X", None))
            # a result laid out as the first argument keeps its spelling; the others
            # are spelled from the layout, without trailing Nones
            result["specs"] = [[repr(o.sharding.spec) for o in tree_leaves(jit(f)(*args))]
                               for f, args in [(wsc, (a,)), (wsc, (b,)),
                                               (lambda u, v: (u * 2, v * 2), (a, b)),
                                               (lambda s, v: v * s, (2.0, b)),
                                               (lambda v: v.sum(1), (b,))]]
        return result
"""


@pytest.fixture(scope="module")
def jax_type_answers():
    """JAX's answers for the two drivers above, from one subprocess."""
    return run_driver_in_jax("""
    import json, sys
    import numpy as np
    import jax.numpy as jnp
    from jax import (ShapeDtypeStruct, device_put, eval_shape, grad, jit, make_jaxpr,
                     make_mesh, set_mesh, typeof, vmap)
    from jax.lax import with_sharding_constraint
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P, explicit_axes
    from jax.tree_util import tree_leaves
""" + _UNTYPED_DRIVER + _SPEC_DRIVER + _PARALLEL_DRIVER + """
    print(json.dumps({"untyped": run_untyped(), "specs": run_specs(json.loads(sys.argv[1])),
                      "parallel": run_parallel_cells()}))
""", SPEC_CASES)


def _plax_type_answers() -> dict:
    scope = dict(np=np, jnp=jnp, P=P, NamedSharding=NamedSharding,
                 AxisType=plax.sharding.AxisType, explicit_axes=plax.sharding.explicit_axes,
                 with_sharding_constraint=plax.lax.with_sharding_constraint,
                 tree_leaves=plax.tree_util.tree_leaves, **{
                     n: getattr(plax, n) for n in (
                         "ShapeDtypeStruct", "device_put", "eval_shape", "grad", "jit",
                         "make_jaxpr", "make_mesh", "set_mesh", "typeof", "vmap")})
    exec(textwrap.dedent(_UNTYPED_DRIVER + _SPEC_DRIVER + _PARALLEL_DRIVER), scope)
    return scope


def test_untyped_sharding_matches_jax(jax_type_answers):
    got = json.loads(json.dumps(_plax_type_answers()["run_untyped"]()))
    assert got == jax_type_answers["untyped"]


def test_unreduced_reduced_specs_match_jax(jax_type_answers):
    got = _plax_type_answers()["run_specs"](SPEC_CASES)
    assert json.loads(json.dumps(got)) == jax_type_answers["specs"]


def test_parallel_notebook_cells_match_jax(jax_type_answers):
    """The illegally sharded result's error, `explicit_axes` given `in_sharding=` at
    the call, and how jit spells its results' specs on an Auto mesh."""
    got = _plax_type_answers()["run_parallel_cells"]()
    assert json.loads(json.dumps(got)) == jax_type_answers["parallel"]


def test_unreduced_shardings_are_types_whose_values_plax_keeps_reduced():
    """Accepted and typed as JAX's (tests/test_manual_axis_types_vs_jax.py compares
    them); plax's buffers always hold the reduced value (no partial sums), so reading
    one gives the value where JAX refuses to read it."""
    mesh = plax.make_mesh((2, 4), ("x", "y"), axis_types=(plax.sharding.AxisType.Explicit,) * 2)
    sharding = NamedSharding(mesh, P("x", unreduced={"y"}))
    assert sharding.spec.unreduced == {"y"} and sharding != NamedSharding(mesh, P("x"))
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    placed = plax.device_put(value, sharding)
    assert placed.sharding == sharding
    np.testing.assert_array_equal(placed, value)
    assert str(plax.typeof(placed)) == "float32[4@x,4]{U:y}"


def test_untyped_avals_equal_and_hash_as_before():
    x = jnp.ones((2, 3))
    aval = plax.typeof(x)
    assert aval.typed_sharding is None and aval.sharding.mesh.empty
    rebuilt = plax.extend.core.ShapedArray((2, 3), np.float32, sharding=aval.sharding)
    assert rebuilt == aval and hash(rebuilt) == hash(aval) and rebuilt.typed_sharding is None
    assert aval.update(shape=(3, 2)).sharding.spec == P(None, None)

