"""The public `plax.lax` API: Jaxprs it stages, parameter canonicalisation, the
primitive registry, and lowering: every primitive to verified StableHLO for every
dtype it accepts, and compiled results against NumPy.

Numerical checks batch many operations into one compiled module each (compiling
is the cost on CI).
"""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from jaxlib import _jax, xla_client
from primitive_sets import EXEMPT
from test_lax_shapes import pad_reference

import plax
from plax import extend, lax
from plax.extend.core import Primitive, ShapeDtypeStruct, dce_jaxpr
from plax_stdlib.lax.select_and_scatter import select_and_scatter
from plax_transforms.lowering import lower_jaxpr_to_module

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)


def jaxpr_text(fun, *args) -> str:
    return str(plax.make_jaxpr(fun)(*args))


def eqns(fun, *args):
    return plax.make_jaxpr(fun)(*args).eqns


# --- Jaxprs ----------------------------------------------------------------------------------

def test_jaxpr_text_of_unary_and_binary_ops():
    assert (jaxpr_text(lambda x: lax.sin(x), 1.0)
            == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }")
    assert "b:f32[3] = add a 1.0" in jaxpr_text(lambda x: lax.add(x, 1.0), np.zeros(3, F32))
    assert "c:f32[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b" in jaxpr_text(
        lax.dot, np.zeros((2, 3), F32), np.zeros((3, 2), F32))
    text = jaxpr_text(lambda x: lax.reduce_sum(x, (1,)), np.zeros((2, 3), F32))
    assert "b:f32[2] = reduce_sum[axes=(1,) out_sharding=None] a" in text


def test_python_scalars_take_their_default_dtype_as_in_jax():
    """JAX's lax gives a Python scalar its default dtype, weakly typed, and takes no
    mixed dtypes: `1.0` meets float32 arrays, `1` int32 ones; anything else is a
    TypeError pointing at jnp (which promotes)."""
    (add,) = eqns(lambda x: lax.add(x, 1.0), np.zeros(3, F32))
    assert add.invars[1].aval.weak_type and add.outvars[0].aval.dtype == F32
    assert plax.make_jaxpr(lambda x: lax.mul(2, x))(np.zeros(3, I32)).out_avals[0].dtype == I32
    for x, scalar, got in ((np.zeros(3, ml_dtypes.bfloat16), 1.0, "bfloat16, float32"),
                           (np.zeros(3, np.uint8), 2, "uint8, int32"),
                           (np.zeros(3, I32), 1.5, "int32, float32"),
                           (np.zeros(3, np.uint8), 300, "uint8, int32")):
        with pytest.raises(TypeError, match=f"got {got}. \\(Tip: jnp.add"):
            plax.jit(lambda x: lax.add(x, scalar))(x)  # noqa: B023 (called at once)
    # jnp promotes: the scalar takes the array's dtype
    assert (plax.numpy.add(np.zeros(3, ml_dtypes.bfloat16), 1.0).dtype
            == np.dtype(ml_dtypes.bfloat16))


def test_params_are_canonical_and_hashable():
    x = np.zeros((2, 1, 3), F32)
    cases = [
        (lambda x: lax.reduce_max(x, [np.int64(2), 0]), "reduce_max", {"axes": (0, 2)}),
        (lambda x: lax.transpose(x, np.array([2, 0, 1])), "transpose", {"permutation": (2, 0, 1)}),
        (lambda x: lax.squeeze(x, [-2]), "squeeze", {"dimensions": (1,)}),
        (lambda x: lax.rev(x, [np.int64(2)]), "rev", {"dimensions": (2,)}),
        (lambda x: lax.argmin(x, np.int64(2), int), "argmin", {"axes": (2,),
                                                               "index_dtype": I32}),
        (lambda x: lax.cumsum(x, 2, reverse=1), "cumsum", {"axis": 2, "reverse": True}),
        (lambda x: lax.reshape(x, [3, 2], (0, 1, 2)), "reshape",
         {"new_sizes": (3, 2), "dimensions": None}),
        (lambda x: lax.convert_element_type(lax.convert_element_type(x, int), np.float64),
         "convert_element_type", {"new_dtype": F32}),  # x64 is off
        (lambda x: lax.dot_general(x, x, ([[2], [2]], [[0], [0]]), precision="highest"),
         "dot_general", {"dimension_numbers": (((2,), (2,)), ((0,), (0,))),
                         "precision": (lax.Precision.HIGHEST,) * 2}),
        (lambda x: lax.pad(x, 0.0, [[1, 0, 0], (0, 0, 1), (0, 0, 0)]), "pad",
         {"padding_config": ((1, 0, 0), (0, 0, 1), (0, 0, 0))}),
        (lambda x: lax.sort(x, 0), "sort", {"dimension": 0}),
    ]
    for fun, name, expected in cases:
        eqn = eqns(fun, x)[-1]
        assert eqn.primitive.name == name
        for key, value in expected.items():
            assert eqn.params[key] == value, (name, key, eqn.params[key])
        hash(tuple(eqn.params.items()))


def test_identity_operations_bind_nothing():
    x = np.zeros((2, 3), F32)
    fun = lambda x: lax.reshape(lax.transpose(lax.broadcast_in_dim(x, (2, 3), (0, 1)), (0, 1)),
                                (2, 3))
    assert eqns(fun, x) == []
    assert eqns(lambda x: lax.squeeze(lax.concatenate([x], 0), ()), x) == []


def test_static_indices_wrap_and_check():
    x = np.zeros(5, F32)
    (eqn,) = eqns(lambda x: lax.dynamic_slice(x, (-2,), (2,)), x)
    assert eqn.invars[1].val == 3
    (eqn,) = eqns(lambda x: lax.slice_in_dim(x, -3, None), x)
    assert (eqn.params["start_indices"], eqn.params["limit_indices"]) == ((2,), (5,))
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        lax.index_in_dim(x, -6)


def test_reduce_recognises_monoids():
    x = np.zeros((2, 3), F32)
    (eqn,) = eqns(lambda x: lax.reduce(x, -np.inf, lax.max, (1,)), x)
    assert eqn.primitive is lax.reduce_max_p and eqn.params["axes"] == (1,)
    reduce_eqn, add_eqn = eqns(lambda x: lax.reduce(x, 1.0, lambda a, b: lax.add(b, a), [0]), x)
    assert (reduce_eqn.primitive, add_eqn.primitive) == (lax.reduce_sum_p, lax.add_p)
    # Other computations are one equation of the general reduce_p, as in JAX.
    (eqn,) = eqns(lambda x: lax.reduce(x, 0.0, lambda a, b: a + 2 * b, (0,)), x)
    assert eqn.primitive is lax.reduce_p and eqn.params["dimensions"] == (0,)


def _argmax_pair(a, b):
    (av, ai), (bv, bi) = a, b
    pick = lax.ge(av, bv)
    return lax.select(pick, av, bv), lax.select(pick, ai, bi)


def test_names_other_packages_contribute_are_listed():
    assert {"with_sharding_constraint", "sharding_constraint_p"} <= set(dir(lax))
    assert lax.sharding_constraint_p.name.endswith("sharding_constraint")


def test_reduce_with_any_computation():
    x = np.array([[3., 1., 4., 1.], [5., 9., 2., 6.], [5., 3., 5., 8.]], F32)
    idx = np.broadcast_to(np.arange(4, dtype=np.int32), x.shape)
    values, where = plax.jit(lambda x: lax.reduce((x, idx), (-np.inf, 0), _argmax_pair, (1,)))(x)
    np.testing.assert_array_equal(values, x.max(1))
    np.testing.assert_array_equal(where, x.argmax(1))
    product = lambda a, b: a * b + 0.0  # noqa: E731 - not recognised as the monoid
    np.testing.assert_allclose(lax.reduce(x, 1.0, product, (0, 1)), np.prod(x), rtol=1e-6)
    pair = lax.reduce({"s": x, "p": x}, {"s": 0.0, "p": 1.0},
                      lambda a, b: {"s": a["s"] + b["s"], "p": a["p"] * b["p"]}, (0,))
    np.testing.assert_allclose(pair["s"], x.sum(0))
    np.testing.assert_allclose(pair["p"], x.prod(0))
    np.testing.assert_array_equal(lax.reduce(x, 0.0, product, ()), x)  # nothing reduced, as JAX
    # Empty reduced dimensions give the initial value; vmap reduces each row.
    np.testing.assert_array_equal(lax.reduce(np.zeros((2, 0), F32), 5.0, product, (1,)), [5, 5])
    np.testing.assert_allclose(plax.vmap(lambda r: lax.reduce(r, 1.0, product, (0,)))(x),
                               x.prod(1), rtol=1e-6)
    with pytest.raises(ValueError, match="same structure"):
        lax.reduce((x, x), 0.0, _argmax_pair, (0,))
    with pytest.raises(ValueError, match="same shape"):
        lax.reduce((x, x[0]), (0.0, 0), _argmax_pair, (0,))
    with pytest.raises(TypeError, match="callable"):
        lax.reduce(x, 0.0, "add", (0,))


def test_reduce_with_any_computation_differentiates():
    from plax.test_util import check_grads
    x = np.array([[0.5, -1.5, 2.0], [1.25, 0.75, -0.5]], F32)
    hand_max = lambda a, b: lax.select(lax.ge(a, b), a, b)  # noqa: E731
    np.testing.assert_array_equal(plax.grad(lambda x: lax.reduce(x, -np.inf, hand_max, (0, 1)))(x),
                                  (x == x.max()).astype(F32))
    product = lambda a, b: a * b + 0.0  # noqa: E731
    check_grads(lambda x: lax.reduce(x, 1.0, product, (1,)), (x,), order=2,
                modes=("fwd", "rev"), atol=2e-2, rtol=2e-2)


def test_lax_functions_run_eagerly():
    x = np.arange(4, dtype=F32)
    np.testing.assert_allclose(np.asarray(lax.add(x, 1.0)), x + 1)
    np.testing.assert_allclose(np.asarray(lax.cumsum(x, reverse=True)), np.cumsum(x[::-1])[::-1])
    assert lax.cumsum(np.zeros((2, 0), F32), 1).shape == (2, 0)  # an empty window


# --- the registry --------------------------------------------------------------------------------

PRIMITIVE_NAMES = set("""
sin add add_any mul sub div rem pow max min neg abs sign floor ceil round is_finite exp exp2 log
log1p expm1 tanh logistic cos tan asin acos atan atan2 sinh cosh asinh acosh atanh sqrt
rsqrt cbrt square integer_pow real imag conj complex nextafter erf erfc erf_inv lgamma
digamma eq ne lt le gt ge and or xor not shift_left shift_right_logical
shift_right_arithmetic population_count clz select_n convert_element_type
bitcast_convert_type iota broadcast_in_dim reshape transpose squeeze concatenate pad slice
dynamic_slice dynamic_update_slice reduce_sum reduce_max reduce_min reduce_prod reduce_and
reduce_or reduce_xor argmax argmin dot_general cumsum cumprod cummax cummin cumlogsumexp rev
clamp sort copy stop_gradient gather polygamma scatter-add scatter
scatter-mul scatter-min scatter-max reduce_window reduce_window_sum reduce_window_max
reduce_window_min select_and_gather_add select_and_scatter_add conv_general_dilated fft
top_k approx_top_k eq_to le_to lt_to split stack unstack tile scatter-sub optimization_barrier
reduce_precision mulhi stage bessel_i0e bessel_i1e
zeta igamma igammac igamma_grad_a regularized_incomplete_beta
rng_uniform dce_sink create_token after_all composite reduce select_and_scatter""".split())


def all_primitives() -> dict[str, Primitive]:
    from plax_stdlib.lax import conversion
    prims = {p.name: p for p in vars(lax).values() if isinstance(p, Primitive)
             and p.name not in EXEMPT}
    prims["copy"] = conversion.copy_p
    return prims


def test_exempted_primitives_exist():
    names = {p.name for p in vars(lax).values() if isinstance(p, Primitive)}
    assert EXEMPT <= names


def test_primitive_names_and_rules():
    prims = all_primitives()
    assert set(prims) == PRIMITIVE_NAMES
    for name, prim in prims.items():
        assert getattr(lax, f"{name}_p", prim) is prim
        assert prim.get_rule("abstract_eval") is not None, name
        assert prim.get_rule("lowering", "cpu") is not None, name
    assert lax.sort_p.multiple_results and not lax.add_p.multiple_results


def test_table_rows_make_primitives_and_their_public_functions():
    """Ops made from rows (`op_table`) look as if written out: `lax.<name>` ids, every
    rule and the function belonging to the module that wrote the row, docstrings,
    and the signature `(x)` or `(x, y)`."""
    import inspect

    from plax_stdlib.lax import bitwise, comparison, elementwise
    keyword_names = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                     "not": "bitwise_not"}
    written_out = set()
    for module in (elementwise, comparison, bitwise):
        for attr, prim in vars(module).items():
            if not (isinstance(prim, Primitive) and attr.endswith("_p")):
                continue
            name = attr[:-2]
            fn = getattr(lax, keyword_names.get(name, name))
            assert prim.id == f"lax.{name}" and prim.module == module.__name__, prim.id
            assert set(extend.rule_modules(prim).values()) == {module.__name__}, prim.id
            assert fn.__module__ == module.__name__ and fn.__doc__, fn
            # (public functions are traceback boundaries around the function written)
            if not inspect.unwrap(fn).__code__.co_filename.endswith("op_table.py"):
                written_out.add(name)
            else:
                assert fn.__name__ == fn.__qualname__ == keyword_names.get(name, name)
                params = list(inspect.signature(fn).parameters)
                assert params in (["x"], ["x", "y"], ["x", "accuracy"]), (name, params)
    assert written_out == {"integer_pow", "pow", "round", "polygamma", "nextafter", "conj",
                           "select_n", "clamp", "mul"}
    with pytest.raises(TypeError, match=r"lax.add requires arguments to have the same dtypes, "
                                        r"got int32, float32. \(Tip: jnp.add"):
        lax.add(np.int32(1), 1.5)
    with pytest.raises(TypeError, match="and does not accept dtype float32"):
        lax.bitwise_and(np.float32(1), 2.0)


def test_importing_lax_does_not_load_mlir():
    import subprocess
    import sys
    code = ("import sys, plax.lax; import plax; plax.make_jaxpr(plax.lax.sin)(1.0); "
            "print('jaxlib.mlir' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


# --- lowering every primitive ---------------------------------------------------------------------

ONE = np.int32(1)
SCATTER_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def _real(x):
    """`x`, unless complex: top_k (as in JAX) rejects complex operands with a ValueError,
    where the table skips dtypes on TypeErrors."""
    if np.dtype(x.dtype).kind == "c":
        raise TypeError("complex")
    return x


# Each use applies primitives to a (2, 3) array; those a dtype does not allow are skipped.
USES = [
    lax.neg, lax.sign, lax.floor, lax.ceil, lax.round, lax.is_finite, lax.exp, lax.exp2,
    lax.log, lax.log1p, lax.expm1, lax.tanh, lax.logistic, lax.sin, lax.cos, lax.tan, lax.asin,
    lax.acos, lax.atan, lax.sinh, lax.cosh, lax.asinh, lax.acosh, lax.atanh, lax.sqrt,
    lax.rsqrt, lax.cbrt, lax.square, lax.abs, lax.real, lax.imag, lax.conj, lax.erf, lax.erfc,
    lax.erf_inv, lax.lgamma, lax.digamma, lax.bessel_i0e, lax.bessel_i1e, lax.bitwise_not,
    lax.population_count, lax.clz, lambda x: lax.betainc(x, x, x),
    *[lambda x, f=f: f(x, x) for f in (
        lax.add, lax.add_any, lax.sub, lax.mul, lax.div, lax.rem, lax.pow, lax.max, lax.min,
        lax.atan2, lax.nextafter, lax.polygamma, lax.zeta, lax.igamma, lax.igammac,
        lax.igamma_grad_a, lax.complex, lax.eq, lax.ne, lax.lt, lax.le,
        lax.gt, lax.ge, lax.bitwise_and, lax.bitwise_or, lax.bitwise_xor, lax.shift_left,
        lax.shift_right_logical, lax.shift_right_arithmetic)],
    lambda x: lax.integer_pow(x, 5),
    lambda x: lax.integer_pow(x, -1),
    lambda x: lax.select_n(lax.convert_element_type(x, I32), x, x, x),
    lambda x: lax.select(lax.eq(x, x), x, x),
    lambda x: lax.clamp(x, x, x),
    *[lambda x, d=d: lax.convert_element_type(x, d)
      for d in (bool, np.int8, np.uint32, np.float16, ml_dtypes.bfloat16, np.float32,
                np.complex64)],
    lambda x: lax.bitcast_convert_type(x, np.uint8),
    lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
    lambda x: lax.reshape(x, (3, 2), (1, 0)),
    lambda x: lax.transpose(x, (1, 0)),
    lambda x: lax.squeeze(lax.expand_dims(x, (0,)), (0,)),
    lambda x: lax.concatenate([x, x], 1),
    lambda x: lax.pad(x, lax.index_in_dim(lax.index_in_dim(x, 0, 0, False), 0, 0, False),
                      [(1, -1, 1), (0, 2, 0)]),
    lambda x: lax.rev(x, (0, 1)),
    lambda x: lax.slice(x, (0, 1), (2, 3), (1, 2)),
    lambda x: lax.dynamic_slice(x, (ONE, ONE), (1, 2)),
    lambda x: lax.dynamic_update_slice(x, lax.slice(x, (0, 0), (1, 2)), (ONE, 0)),
    lambda x: lax.broadcasted_iota(x.dtype, (2, 3), 1),
    lambda x: lax.copy_p.bind(x),
    lambda x: lax.stop_gradient(x),
    lambda x: lax.gather(x, np.array([[1], [0]], np.int32),
                         lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                    start_index_map=(0,)), (1, 3),
                         mode=lax.GatherScatterMode.CLIP),
    lambda x: lax.scatter_add(x, np.array([[1], [1]], np.int32), lax.slice(x, (0, 0), (2, 3)),
                              SCATTER_ROWS),
    lambda x: lax.scatter(x, np.array([[1]], np.int32), lax.slice(x, (0, 0), (1, 3)),
                          SCATTER_ROWS, mode="clip"),
    *[lambda x, f=f: f(x, np.array([[0], [1]], np.int32), lax.slice(x, (0, 0), (2, 3)),
                       SCATTER_ROWS) for f in (lax.scatter_mul, lax.scatter_min, lax.scatter_max)],
    *[lambda x, f=f: f(x, (0, 1)) for f in (
        lax.reduce_sum, lax.reduce_prod, lax.reduce_max, lax.reduce_min, lax.reduce_and,
        lax.reduce_or, lax.reduce_xor)],
    lambda x: lax.argmax(x, 1, np.int32),
    lambda x: lax.argmin(x, 0, np.uint8),
    *[lambda x, f=f, r=r: f(x, 1, r) for f in (
        lax.cumsum, lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp) for r in (False, True)],
    lambda x: lax.dot_general(x, x, (((1,), (1,)), ((0,), (0,)))),
    lambda x: lax.dot(x, lax.transpose(x, (1, 0))),
    lambda x: lax.sort((x, x, x), 1, num_keys=2),
    lambda x: lax.sort(x, 0),
    lambda x: lax.top_k(_real(x), 2),
    lambda x: lax.approx_max_k(x, 1, reduction_dimension=0),
    *[lambda x, p=p: p.bind(x, x) for p in (lax.eq_to_p, lax.le_to_p, lax.lt_to_p)],
    lambda x: lax.split(x, (1, 2), 1),
    lambda x: lax.stack([x, x]),
    lambda x: lax.unstack(x, 1),
    lambda x: lax.tile(x, (1, 2)),
    lambda x: lax.scatter_sub(x, np.array([[1]], np.int32), lax.slice(x, (0, 0), (1, 3)),
                              SCATTER_ROWS),
    lambda x: lax.optimization_barrier([x, x]),
    lambda x: lax.reduce_precision(x, 4, 3),
    lambda x: lax.mulhi(x, x),
    lax.stage_p.bind,
    *[lambda x, f=f: f(x, (2, 2), (1, 2), "SAME") for f in (
        lax.reduce_window_sum, lax.reduce_window_max, lax.reduce_window_min)],
    lambda x: lax.reduce_window(x, np.ones((), x.dtype)[()], lax.mul, (1, 2)),
    lambda x: lax.reduce(x, np.ones((), x.dtype)[()], lambda a, b: lax.max(a, lax.mul(a, b)),
                         (1,)),
    lambda x: lax.select_and_gather_add(x, x, lax.ge_p, (2, 2), (1, 1), "VALID"),
    lambda x: lax.select_and_scatter_add(lax.slice(x, (0, 0), (1, 2)), x, lax.le_p, (2, 2),
                                         (1, 1), "VALID"),
    lambda x: lax.conv(lax.reshape(x, (1, 1, 2, 3)), lax.reshape(x, (1, 1, 2, 3)), (1, 1),
                       "SAME"),
    lambda x: lax.fft_p.bind(x, fft_type=lax.FftType.FFT, fft_lengths=(3,)),  # complex only
    lambda x: lax.rng_uniform(lax.reshape(lax.slice(x, (0, 0), (1, 1)), ()),
                              lax.reshape(lax.slice(x, (0, 0), (1, 1)), ()), (2,)),
    lambda x: select_and_scatter(x, lax.ge, (1, 2), (1, 1), ((0, 0), (0, 0)),
                                 lax.slice(x, (0, 0), (2, 2)), np.zeros((), x.dtype)[()],
                                 lax.add),
    lambda x: (lax.dce_sink(x, prevent_mlir_dce=True), x)[1],
    lambda x: lax.after_all(lax.create_token()),
    lambda x: lax.composite(lambda y, **_: lax.neg(y), name="plax_test.neg", version=1)(
        x, note="a"),
]

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int8, np.uint8, np.uint32,
          bool, np.complex64, ml_dtypes.float8_e4m3fn, ml_dtypes.int4]


def every_use(dtype):
    """The Jaxpr applying each use that `dtype` allows."""
    def uses(x):
        outs = []
        for use in USES:
            try:
                out = use(x)
            except (TypeError, ValueError):  # the dtype (or its width) is not accepted
                continue
            outs.extend(out if isinstance(out, tuple) else [out])
        return outs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return plax.make_jaxpr(uses)(ShapeDtypeStruct((2, 3), dtype))


def test_uses_cover_every_primitive():
    covered = set()
    for dtype in DTYPES:
        jaxpr = every_use(dtype).jaxpr
        live, _ = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))  # what lowering keeps
        covered |= {eqn.primitive.name for eqn in live.eqns}
    assert covered == PRIMITIVE_NAMES


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_primitive_lowers_to_verified_stablehlo(dtype):
    lower_jaxpr_to_module(every_use(dtype), name="lax_test", platform="cpu")  # verifies


# --- compiled results against NumPy ------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu():
    client = xla_client.make_cpu_client()
    return client, client.devices()[0]


def run(cpu, fun, *args):
    """Compile `fun` (traced on `args`) with XLA and run it on `args`."""
    client, device = cpu
    closed = plax.make_jaxpr(fun)(*args)
    lowering = lower_jaxpr_to_module(closed, name="lax_test", platform="cpu", keep_unused=True)
    assert not lowering.const_args
    devices = _jax.DeviceList((device,))
    executable = client.compile_and_load(lowering.as_text(), devices,
                                         xla_client.CompileOptions())
    sharding = _jax.GSPMDSharding(devices, xla_client.HloSharding.replicate())
    buffers = [_jax.batched_device_put(aval, sharding, [np.asarray(a, aval.dtype)], [device],
                                       True, False, enable_x64=True)
               for a, aval in zip(args, closed.in_avals)]
    outs = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return [np.asarray(o[0]) for o in outs]


def check(cpu, cases: dict, *args, rtol=1e-6, atol=1e-6):
    """`cases` maps a name to (lax function, NumPy reference), both applied to `args`;
    all lax functions run in one compiled module."""
    names = list(cases)
    outs = run(cpu, lambda *xs: [cases[n][0](*xs) for n in names], *args)
    for name, out in zip(names, outs):
        expected = np.asarray(cases[name][1](*args))
        assert out.shape == expected.shape, name
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol, err_msg=name)


def np_round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def test_float32_math(cpu):
    x = np.linspace(-0.9, 0.9, 7, dtype=F32)
    p = np.linspace(0.25, 3.0, 7, dtype=F32)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 2.5, -2.5, 1e-30], F32)
    unary = {
        "sin": (lax.sin, np.sin), "cos": (lax.cos, np.cos), "tan": (lax.tan, np.tan),
        "asin": (lax.asin, np.arcsin), "acos": (lax.acos, np.arccos),
        "atan": (lax.atan, np.arctan), "sinh": (lax.sinh, np.sinh), "cosh": (lax.cosh, np.cosh),
        "tanh": (lax.tanh, np.tanh), "asinh": (lax.asinh, np.arcsinh),
        "atanh": (lax.atanh, np.arctanh), "exp": (lax.exp, np.exp), "exp2": (lax.exp2, np.exp2),
        "expm1": (lax.expm1, np.expm1), "log1p": (lax.log1p, np.log1p),
        "logistic": (lax.logistic, lambda v: 1 / (1 + np.exp(-v))), "cbrt": (lax.cbrt, np.cbrt),
        "erf": (lax.erf, np.vectorize(math.erf)), "erfc": (lax.erfc, np.vectorize(math.erfc)),
        "erf_inv": (lambda v: lax.erf(lax.erf_inv(v)), lambda v: v),
        "square": (lax.square, np.square), "neg": (lax.neg, np.negative),
        "sign": (lax.sign, np.sign), "abs": (lax.abs, np.abs),
        "integer_pow": (lambda v: lax.integer_pow(v, 5), lambda v: v ** 5),
    }
    positive = {
        "log": (lax.log, np.log), "sqrt": (lax.sqrt, np.sqrt),
        "rsqrt": (lax.rsqrt, lambda v: 1 / np.sqrt(v)),
        "acosh": (lambda v: lax.acosh(lax.add(v, 1.0)), lambda v: np.arccosh(v + 1)),
        "lgamma": (lax.lgamma, np.vectorize(math.lgamma)),
        "digamma recurrence": (lambda v: lax.sub(lax.digamma(lax.add(v, 1.0)), lax.digamma(v)),
                               lambda v: 1 / v),
        "integer_pow<0": (lambda v: lax.integer_pow(v, -3), lambda v: v ** -3.0),
        "integer_pow=0": (lambda v: lax.integer_pow(v, 0), np.ones_like),
    }
    binary = {
        "add": (lax.add, np.add), "sub": (lax.sub, np.subtract), "mul": (lax.mul, np.multiply),
        "div": (lax.div, np.divide), "rem": (lax.rem, np.fmod), "pow": (lax.pow, np.power),
        "pow int": (lambda a, b: lax.pow(a, 3), lambda a, b: a ** 3),
        "atan2": (lax.atan2, np.arctan2), "max": (lax.max, np.maximum),
        "min": (lax.min, np.minimum), "nextafter": (lax.nextafter, np.nextafter),
        "clamp": (lambda a, b: lax.clamp(-0.5, a, b), lambda a, b: np.minimum(
            np.maximum(a, -0.5), b)),
        "select": (lambda a, b: lax.select(lax.lt(a, 0.0), a, b),
                   lambda a, b: np.where(a < 0, a, b)),
        "lt": (lax.lt, np.less), "le": (lax.le, np.less_equal), "gt": (lax.gt, np.greater),
        "ge": (lax.ge, np.greater_equal), "eq": (lax.eq, np.equal),
        "ne": (lax.ne, np.not_equal),
    }
    specials = {
        "is_finite": (lax.is_finite, np.isfinite), "floor": (lax.floor, np.floor),
        "ceil": (lax.ceil, np.ceil), "round": (lax.round, np_round_away),
        "round even": (lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN), np.round),
        "max nan": (lambda v: lax.max(v, 0.0), lambda v: np.maximum(v, np.float32(0))),
        "sign special": (lax.sign, np.sign),
    }
    cases = {**{k: (lambda x, p, s, f=f: f(x), lambda x, p, s, g=g: g(x))
                for k, (f, g) in unary.items()},
             **{k: (lambda x, p, s, f=f: f(p), lambda x, p, s, g=g: g(p))
                for k, (f, g) in positive.items()},
             **{k: (lambda x, p, s, f=f: f(x, p), lambda x, p, s, g=g: g(x, p))
                for k, (f, g) in binary.items()},
             **{k: (lambda x, p, s, f=f: f(s), lambda x, p, s, g=g: g(s))
                for k, (f, g) in specials.items()}}
    with np.errstate(invalid="ignore"):
        check(cpu, cases, x, p, special, rtol=2e-5, atol=2e-6)
    (digamma,) = run(cpu, lax.digamma, np.array([1.0, 0.5], F32))
    euler = 0.5772156649015329
    np.testing.assert_allclose(digamma, [-euler, -euler - 2 * math.log(2)], rtol=1e-5)


def test_integer_and_bool_ops(cpu):
    a = np.array([-7, 7, 5, -5, 0, 2**31 - 1, -2**31], I32)
    b = np.array([2, -3, 5, 3, 1, 2, -1], I32)
    shift = np.array([0, 1, 31, 32, 33, 3, 1], I32)
    u = np.array([0, 200, 3, 255, 17, 128, 1], np.uint8)
    t = np.array([True, False, True, False, True, True, False])
    bits = np.vectorize(lambda v: int(v).bit_length())
    cases = {
        "div": (lambda a, b, *_: lax.div(a, b), lambda a, b, *_: np.trunc(
            a.astype(np.float64) / b).astype(np.int64).astype(I32)),
        "rem": (lambda a, b, *_: lax.rem(a, b), lambda a, b, *_: np.fmod(a, b)),
        "add wraps": (lambda a, b, *_: lax.add(a, b), lambda a, b, *_: a + b),
        "mul": (lambda a, b, *_: lax.mul(a, b), lambda a, b, *_: a * b),
        "max": (lambda a, b, *_: lax.max(a, b), lambda a, b, *_: np.maximum(a, b)),
        "abs": (lambda a, *_: lax.abs(a), lambda a, *_: np.abs(a)),
        "sign": (lambda a, *_: lax.sign(a), lambda a, *_: np.sign(a)),
        "integer_pow": (lambda a, *_: lax.integer_pow(a, 3), lambda a, *_: a ** 3),
        "and": (lambda a, b, *_: lax.bitwise_and(a, b), lambda a, b, *_: a & b),
        "or": (lambda a, b, *_: lax.bitwise_or(a, b), lambda a, b, *_: a | b),
        "xor": (lambda a, b, *_: lax.bitwise_xor(a, b), lambda a, b, *_: a ^ b),
        "not": (lambda a, *_: lax.bitwise_not(a), lambda a, *_: ~a),
        "shift_left": (lambda a, b, s, *_: lax.shift_left(a, s), lambda a, b, s, *_: np.where(
            s < 32, (a.astype(np.int64) << np.minimum(s, 31)).astype(I32), 0)),
        "shift_right_logical": (
            lambda a, b, s, *_: lax.shift_right_logical(a, s),
            lambda a, b, s, *_: np.where(s < 32, (a.view(np.uint32) >> np.minimum(s, 31).astype(
                np.uint32)).view(I32), 0)),
        "shift_right_arithmetic": (lambda a, b, s, *_: lax.shift_right_arithmetic(a, s),
                                   lambda a, b, s, *_: a >> np.minimum(s, 31)),
        "population_count": (lambda a, *_: lax.population_count(a),
                             lambda a, *_: np.bitwise_count(a.view(np.uint32)).astype(I32)),
        "clz": (lambda a, *_: lax.clz(a), lambda a, *_: 32 - bits(a.view(np.uint32))),
        "u8 add": (lambda a, b, s, u, t: lax.add(u, np.uint8(100)),
                   lambda a, b, s, u, t: u + np.uint8(100)),
        "u8 sign": (lambda a, b, s, u, t: lax.sign(u), lambda a, b, s, u, t: np.sign(u)),
        "u8 neg": (lambda a, b, s, u, t: lax.neg(u), lambda a, b, s, u, t: -u),
        "u8 lt": (lambda a, b, s, u, t: lax.lt(u, np.uint8(100)), lambda a, b, s, u, t: u < 100),
        "u8 div": (lambda a, b, s, u, t: lax.div(u, np.uint8(7)), lambda a, b, s, u, t: u // 7),
        "bool and": (lambda a, b, s, u, t: lax.bitwise_and(t, lax.bitwise_not(lax.rev(t, (0,)))),
                     lambda a, b, s, u, t: t & ~t[::-1]),
        "bool max": (lambda a, b, s, u, t: lax.max(t, lax.rev(t, (0,))),
                     lambda a, b, s, u, t: t | t[::-1]),
        "bool eq": (lambda a, b, s, u, t: lax.eq(t, True), lambda a, b, s, u, t: t),
    }
    with np.errstate(over="ignore"):
        check(cpu, cases, a, b, shift, u, t, rtol=0, atol=0)


def test_complex_ops(cpu):
    z = np.array([1 + 2j, 1 + 1j, -1 + 5j, 0.5 - 0.25j], np.complex64)
    w = np.array([2 - 1j, 1 + 1j, 3 + 0j, -1 + 1j], np.complex64)
    cases = {
        "add": (lax.add, np.add), "mul": (lax.mul, np.multiply), "div": (lax.div, np.divide),
        "exp": (lambda z, w: lax.exp(z), lambda z, w: np.exp(z)),
        "log": (lambda z, w: lax.log(z), lambda z, w: np.log(z)),
        "sqrt": (lambda z, w: lax.sqrt(z), lambda z, w: np.sqrt(z)),
        "sin": (lambda z, w: lax.sin(z), lambda z, w: np.sin(z)),
        "tanh": (lambda z, w: lax.tanh(z), lambda z, w: np.tanh(z)),
        "asinh": (lambda z, w: lax.asinh(z), lambda z, w: np.arcsinh(z)),
        "abs": (lambda z, w: lax.abs(z), lambda z, w: np.abs(z)),
        "sign": (lambda z, w: lax.sign(z), lambda z, w: z / np.abs(z)),
        "real": (lambda z, w: lax.real(z), lambda z, w: z.real),
        "imag": (lambda z, w: lax.imag(z), lambda z, w: z.imag),
        "conj": (lambda z, w: lax.conj(z), lambda z, w: np.conj(z)),
        "conj of real": (lambda z, w: lax.conj(lax.real(z)), lambda z, w: z.real + 0j),
        "complex": (lambda z, w: lax.complex(lax.real(z), lax.imag(w)),
                    lambda z, w: z.real + 1j * w.imag),
        "pow": (lax.pow, np.power), "integer_pow": (lambda z, w: lax.integer_pow(z, -2),
                                                     lambda z, w: z ** -2),
        "max": (lax.max, np.maximum), "min": (lax.min, np.minimum),
        "eq": (lax.eq, np.equal), "ne": (lax.ne, np.not_equal),
    }
    check(cpu, cases, z, w, rtol=1e-5, atol=1e-6)


def test_float64_and_int64_with_x64(cpu):
    with plax.enable_x64(True):
        x = np.linspace(-1, 1, 5)
        n = np.array([2**40, -3, 7, 0, 1], np.int64)
        cases = {
            "sin": (lambda x, n: lax.sin(x), lambda x, n: np.sin(x)),
            "add scalar": (lambda x, n: lax.add(x, 1e-12), lambda x, n: x + 1e-12),
            "mul int64": (lambda x, n: lax.mul(n, 3), lambda x, n: n * 3),
            "to int64": (lambda x, n: lax.convert_element_type(lax.mul(x, 1e12), np.int64),
                         lambda x, n: (x * 1e12).astype(np.int64)),
            "cumsum": (lambda x, n: lax.cumsum(x), lambda x, n: np.cumsum(x)),
            "c128": (lambda x, n: lax.exp(lax.complex(x, x)), lambda x, n: np.exp(x + 1j * x)),
            "dot": (lambda x, n: lax.dot(x, x), lambda x, n: x @ x),
        }
        check(cpu, cases, x, n, rtol=1e-14, atol=1e-15)


NARROW = [ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_narrow_floats(cpu, dtype):
    x = np.array([1.5, -2, 0.25, 3, -0.5, 8], dtype)
    f = x.astype(F32)
    as_dtype = lambda v: np.asarray(v, F32).astype(dtype).astype(F32)
    cases = {
        "add": (lambda x: lax.add(x, x), lambda x: as_dtype(f + f)),
        "mul": (lambda x: lax.mul(x, x), lambda x: as_dtype(f * f)),
        "max": (lambda x: lax.max(x, lax.rev(x, (0,))), lambda x: np.maximum(f, f[::-1])),
        "reduce_max": (lambda x: lax.reduce_max(x, (0,)), lambda x: f.max()),
        "reduce_min": (lambda x: lax.reduce_min(x, (0,)), lambda x: f.min()),
        "argmax": (lambda x: lax.argmax(x, 0, np.int32), lambda x: np.argmax(f)),
        "sort": (lambda x: lax.sort(x), lambda x: np.sort(f)),
        "to f32": (lambda x: lax.convert_element_type(x, np.float32), lambda x: f),
        "from f32": (lambda x: lax.convert_element_type(lax.convert_element_type(x, np.float32),
                                                        dtype), lambda x: f),
    }
    names = list(cases)
    outs = run(cpu, lambda x: [cases[n][0](x) for n in names], x)
    for name, out in zip(names, outs):
        np.testing.assert_array_equal(np.asarray(out).astype(F32), cases[name][1](x),
                                      err_msg=name)


def test_shape_ops(cpu):
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i, j = np.int32(2), np.int32(-1)
    cases = {
        "broadcast_in_dim": (lambda x, i, j: lax.broadcast_in_dim(x, (3, 2, 4), (0, 2)),
                             lambda x, i, j: np.broadcast_to(x[:, None, :], (3, 2, 4))),
        "broadcast": (lambda x, i, j: lax.broadcast(x, (2,)), lambda x, i, j: np.stack([x, x])),
        "reshape": (lambda x, i, j: lax.reshape(x, (2, 6)), lambda x, i, j: x.reshape(2, 6)),
        "reshape dims": (lambda x, i, j: lax.reshape(x, (6, 2), (1, 0)),
                         lambda x, i, j: x.T.reshape(6, 2)),
        "transpose": (lambda x, i, j: lax.transpose(x, (1, 0)), lambda x, i, j: x.T),
        "expand+squeeze": (lambda x, i, j: lax.squeeze(lax.expand_dims(x, (0, -1)), (0,)),
                           lambda x, i, j: x[:, :, None]),
        "concatenate": (lambda x, i, j: lax.concatenate([x, lax.neg(x)], 1),
                        lambda x, i, j: np.concatenate([x, -x], 1)),
        "pad": (lambda x, i, j: lax.pad(x, -1.0, [(1, -2, 1), (-1, 2, 2)]),
                lambda x, i, j: pad_reference(x, -1.0, [(1, -2, 1), (-1, 2, 2)])),
        "rev": (lambda x, i, j: lax.rev(x, (0, 1)), lambda x, i, j: x[::-1, ::-1]),
        "slice": (lambda x, i, j: lax.slice(x, (0, 1), (3, 4), (2, 2)),
                  lambda x, i, j: x[0:3:2, 1:4:2]),
        "dynamic_slice": (lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 2)),
                          lambda x, i, j: x[1:3, 2:4]),  # start clamped, -1 wraps to 3
        "dynamic_update_slice": (
            lambda x, i, j: lax.dynamic_update_slice(x, lax.full((2, 3), 0.0), (i, i)),
            lambda x, i, j: np.where((np.arange(3)[:, None] >= 1) & (np.arange(4) >= 1), 0, x)),
        "dynamic_index_in_dim": (lambda x, i, j: lax.dynamic_index_in_dim(x, j, 1, False),
                                 lambda x, i, j: x[:, -1]),
        "dynamic_update_index_in_dim": (
            lambda x, i, j: lax.dynamic_update_index_in_dim(x, lax.full((4,), 9.0), j, 0),
            lambda x, i, j: np.concatenate([x[:2], np.full((1, 4), 9.0, F32)])),
        "iota": (lambda x, i, j: lax.broadcasted_iota(np.int32, (2, 3), 1),
                 lambda x, i, j: np.broadcast_to(np.arange(3), (2, 3))),
        "full_like": (lambda x, i, j: lax.full_like(x, 7, np.int8),
                      lambda x, i, j: np.full((3, 4), 7, np.int8)),
        "select_n int": (lambda x, i, j: lax.select_n(lax.rem(lax.convert_element_type(
            x, np.int32), 3), x, lax.neg(x), lax.mul(x, 10.0)),
            lambda x, i, j: np.choose(x.astype(int) % 3, [x, -x, 10 * x])),
    }
    check(cpu, cases, x, i, j, rtol=0, atol=0)


def test_reductions_scans_and_sorts(cpu):
    x = np.array([[3., np.nan, -0., 0.], [-np.inf, 7., 7., -1.], [2., 2., 5., 1.]], F32)
    y = np.array([[3., 1., -2., 0.5], [-4., 7., 7., -1.], [2., 2., 5., 1.]], F32)
    n = np.array([[3, 1, 3, 0], [5, 1, 1, 2], [6, 2, 5, 1]], np.int32)
    cases = {
        "reduce_sum": (lambda x, y, n: lax.reduce_sum(y, (0, 1)), lambda x, y, n: y.sum()),
        "reduce_prod": (lambda x, y, n: lax.reduce_prod(y, (1,)), lambda x, y, n: y.prod(1)),
        "reduce_max nan": (lambda x, y, n: lax.reduce_max(x, (1,)),
                           lambda x, y, n: np.max(x, 1)),
        "reduce_min": (lambda x, y, n: lax.reduce_min(x, (0,)), lambda x, y, n: np.min(x, 0)),
        "reduce_and": (lambda x, y, n: lax.reduce_and(n, (1,)),
                       lambda x, y, n: np.bitwise_and.reduce(n, 1)),
        "reduce_or": (lambda x, y, n: lax.reduce_or(n, (0,)),
                      lambda x, y, n: np.bitwise_or.reduce(n, 0)),
        "reduce_xor": (lambda x, y, n: lax.reduce_xor(n, (0, 1)),
                       lambda x, y, n: np.bitwise_xor.reduce(n.ravel())),
        "reduce_or bool": (lambda x, y, n: lax.reduce_or(lax.gt(n, 4), (1,)),
                           lambda x, y, n: (n > 4).any(1)),
        "lax.reduce": (lambda x, y, n: lax.reduce(y, 10.0, lax.add, (1,)),
                       lambda x, y, n: y.sum(1) + 10),
        "argmax nan": (lambda x, y, n: lax.argmax(x, 1, np.int32),
                       lambda x, y, n: np.argmax(x, 1)),
        "argmin nan": (lambda x, y, n: lax.argmin(x, 1, np.int32),
                       lambda x, y, n: np.argmin(x, 1)),
        "argmax ties": (lambda x, y, n: lax.argmax(n, 0, np.int32),
                        lambda x, y, n: np.argmax(n, 0)),
        "cumsum": (lambda x, y, n: lax.cumsum(y, 1), lambda x, y, n: np.cumsum(y, 1)),
        "cumsum reverse": (lambda x, y, n: lax.cumsum(n, 0, reverse=True),
                           lambda x, y, n: np.cumsum(n[::-1], 0)[::-1]),
        "cumprod": (lambda x, y, n: lax.cumprod(y, 1), lambda x, y, n: np.cumprod(y, 1)),
        "cummax": (lambda x, y, n: lax.cummax(x, 1), lambda x, y, n: np.maximum.accumulate(x, 1)),
        "cummin reverse": (lambda x, y, n: lax.cummin(y, 1, reverse=True),
                           lambda x, y, n: np.minimum.accumulate(y[:, ::-1], 1)[:, ::-1]),
        "cumlogsumexp": (lambda x, y, n: lax.cumlogsumexp(lax.slice(x, (1, 0), (3, 4)), 1),
                         lambda x, y, n: np.logaddexp.accumulate(x[1:], 1)),
        "sort": (lambda x, y, n: lax.sort(x, 1), lambda x, y, n: np.sort(x, 1)),
        "sort dim 0": (lambda x, y, n: lax.sort(n, 0), lambda x, y, n: np.sort(n, 0)),
    }
    with np.errstate(invalid="ignore"):
        check(cpu, cases, x, y, n, rtol=1e-6, atol=1e-6)
    keys = np.array([2, 1, 2, 1, 0, 2], np.int32)
    minor = np.array([0.5, -1.0, -0.5, 3.0, 9.0, 0.5], F32)
    order = np.lexsort((minor, keys))
    out = run(cpu, lambda k, m: lax.sort((k, m, lax.iota(np.int32, 6)), num_keys=2), keys, minor)
    np.testing.assert_array_equal(out[2], order)
    k, v = run(cpu, lax.sort_key_val, minor, keys)
    np.testing.assert_array_equal(v, keys[np.argsort(minor, kind="stable")])


def test_dot_general(cpu):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(F32)
    b = rng.standard_normal((4, 2, 5)).astype(F32)
    i8 = rng.integers(-100, 100, (3, 4)).astype(np.int8)
    bf = rng.standard_normal((3, 4)).astype(ml_dtypes.bfloat16)
    cases = {
        "batch+contract": (lambda a, b, i8, bf: lax.dot_general(a, b, (((2,), (0,)), ((0,), (1,)))),
                           lambda a, b, i8, bf: np.einsum("bik,kbj->bij", a, b)),
        "contract two": (lambda a, b, i8, bf: lax.dot_general(a, a, (((1, 2), (1, 2)), ((), ()))),
                         lambda a, b, i8, bf: np.einsum("aij,bij->ab", a, a)),
        "outer": (lambda a, b, i8, bf: lax.dot_general(a, b, (((), ()), ((), ()))),
                  lambda a, b, i8, bf: np.einsum("abc,def->abcdef", a, b)),
        "dot": (lambda a, b, i8, bf: lax.dot(lax.index_in_dim(a, 0, 0, False),
                                             lax.index_in_dim(b, 0, 1, False),
                                             precision=lax.Precision.HIGHEST),
                lambda a, b, i8, bf: a[0] @ b[:, 0]),
        "batch_matmul": (lambda a, b, i8, bf: lax.batch_matmul(a, lax.transpose(b, (1, 0, 2))),
                         lambda a, b, i8, bf: a @ b.transpose(1, 0, 2)),
        "int8→int32": (lambda a, b, i8, bf: lax.dot(i8, lax.transpose(i8, (1, 0)),
                                                     preferred_element_type=np.int32),
                       lambda a, b, i8, bf: i8.astype(np.int32) @ i8.T.astype(np.int32)),
        "int8→f32": (lambda a, b, i8, bf: lax.dot(i8, lax.transpose(i8, (1, 0)),
                                                   preferred_element_type=np.float32),
                     lambda a, b, i8, bf: i8.astype(F32) @ i8.T.astype(F32)),
        "bf16→f32": (lambda a, b, i8, bf: lax.dot(bf, lax.transpose(bf, (1, 0)),
                                                   preferred_element_type=np.float32),
                     lambda a, b, i8, bf: bf.astype(F32) @ bf.T.astype(F32)),
    }
    check(cpu, cases, a, b, i8, bf, rtol=1e-5, atol=1e-5)


def test_conversions(cpu):
    f = np.array([-1.7, -0.5, 0., 0.5, 2.5, 300.0, -300.0], F32)
    n = np.array([-3, 0, 1, 255, 256, 2**20, -2**20], I32)
    cases = {
        "f32→i32": (lambda f, n: lax.convert_element_type(f, np.int32),
                    lambda f, n: f.astype(np.int32)),
        "f32→bool": (lambda f, n: lax.convert_element_type(f, bool), lambda f, n: f != 0),
        "i32→f16": (lambda f, n: lax.convert_element_type(n, np.float16),
                    lambda f, n: n.astype(np.float16)),
        "i32→u8": (lambda f, n: lax.convert_element_type(n, np.uint8),
                   lambda f, n: n.astype(np.uint8)),
        "bool→f32": (lambda f, n: lax.convert_element_type(lax.gt(n, 0), np.float32),
                     lambda f, n: (n > 0).astype(F32)),
        "c64→f32": (lambda f, n: lax.convert_element_type(lax.complex(f, f), np.float32),
                    lambda f, n: f),
        "bitcast f32→u32": (lambda f, n: lax.bitcast_convert_type(f, np.uint32),
                            lambda f, n: f.view(np.uint32)),
        "bitcast f32→u8": (lambda f, n: lax.bitcast_convert_type(f, np.uint8),
                           lambda f, n: f.view(np.uint8).reshape(7, 4)),
        "bitcast i32→f32": (lambda f, n: lax.bitcast_convert_type(n, np.float32),
                            lambda f, n: n.view(F32)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        check(cpu, cases, f, n, rtol=0, atol=0)


def test_bitcast_checks_sizes_before_bool_and_complex_as_jax():
    with pytest.raises(ValueError, match="last dimension"):
        lax.bitcast_convert_type(np.zeros(1, np.int32), np.complex64)
    with pytest.raises(TypeError, match="own dtype"):
        lax.bitcast_convert_type(np.zeros((1, 2), np.int32), np.complex64)
    with pytest.raises(TypeError, match="own dtype"):
        lax.bitcast_convert_type(np.zeros(2, np.complex64), np.float32)
    with pytest.raises(TypeError, match="own dtype"):
        lax.bitcast_convert_type(np.zeros(2, np.bool_), np.int8)
    z = np.array([1 + 2j, -3j], np.complex64)
    np.testing.assert_array_equal(lax.bitcast_convert_type(z, np.complex64), z)


def test_convert_element_type_folds_host_scalars_under_a_trace():
    """As JAX's: a Python or NumPy scalar converted while tracing is a literal of the
    new dtype (no equation); eagerly it is an Array; a non-finite float to an integer
    is left to XLA's conversion."""
    eqns = plax.make_jaxpr(lambda x: x < lax.convert_element_type(0.3, np.float32))(
        np.float32(1)).eqns
    assert [e.primitive.name for e in eqns] == ["lt"]
    assert eqns[0].invars[1].val == np.float32(0.3)
    y = lax.convert_element_type(0.3, np.float32)
    assert isinstance(y, plax.Array) and y.dtype == np.float32 and not y.weak_type
    eqns = plax.make_jaxpr(lambda: lax.convert_element_type(np.inf, np.int32))().eqns
    assert [e.primitive.name for e in eqns] == ["convert_element_type"]
    assert int(plax.jit(lambda: lax.convert_element_type(2.7, np.int32))()) == 2


def test_split_sizes_are_integers_and_numpy_ones_stay_so():
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        lax.split(np.arange(3.0, dtype=np.float32), (1.5, 1.5))
    text = str(plax.make_jaxpr(lambda x: lax.split(x, (1, np.int64(2))))(
        np.arange(3.0, dtype=np.float32)))
    assert "sizes=(1, np.int64(2))" in text
