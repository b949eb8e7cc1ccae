"""Lowering Jaxprs to StableHLO: module structure, names, locations, constants,
donation, private functions, rule lookup; and every `lax` primitive lowered and
run (eagerly and under jit) against NumPy across dtypes."""
from __future__ import annotations

import math
import re
import zlib
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo
from primitive_sets import EXEMPT, NO_VALUES

import plax
from plax import lax
from plax.extend.core import Primitive, ShapedArray, subjaxprs
from plax_transforms import mlir_context
from plax_transforms.lowering import lower_jaxpr_to_module
from plax_stdlib.lax.select_and_scatter import select_and_scatter as _select_and_scatter

bf16 = np.dtype(ml_dtypes.bfloat16)


def lowered_text(fun, *args, debug_info=False, **jit_kwargs):
    return plax.jit(fun, **jit_kwargs).lower(*args).as_text(debug_info=debug_info)


def main_signature(text: str) -> str:
    return next(line for line in text.splitlines() if "func.func public @main" in line)


def main_args(text: str) -> list[str]:
    """The text of each argument of `@main`, with its attributes."""
    return main_signature(text).split(") -> ")[0].split("%arg")[1:]


# --- names, locations, module attributes ------------------------------------------------

def arg_names(text: str) -> list[str]:
    """The names of `@main`'s arguments: their name locations (shown with debug info)."""
    return re.findall(r'%arg\d+: [^ ]+ loc\("([^"]*)"\)', main_signature(text))


def test_argument_names_are_locations_and_result_paths_attributes():
    """As JAX 0.10's: the arguments' names are their locations (no `jax.arg_info`, which
    JAX no longer emits), the results' paths `jax.result_info` attributes."""
    fun = lambda alpha, beta: alpha * beta  # noqa: E731
    sig = main_signature(lowered_text(fun, 1., 2.))
    assert "arg_info" not in sig and 'jax.result_info = "result"' in sig
    assert arg_names(lowered_text(fun, 1., 2., debug_info=True)) == ["alpha", "beta"]


def test_pytree_argument_names_follow_flattening_order():
    def f(params, x, *, scale):
        return {"out": params["w"] * x * scale, "b": params["b"]}

    params = {"w": np.ones(2, np.float32), "b": np.zeros(2, np.float32)}
    text = plax.jit(f).lower(params, np.ones(2, np.float32), scale=2.0).as_text(
        debug_info=True)
    assert arg_names(text) == ["params['b']", "params['w']", "x", "scale"]
    results = re.findall(r'jax.result_info = "([^"]*)"', main_signature(text))
    assert results == ["result['b']", "result['out']"]


def test_argument_name_locations_with_debug_info():
    text = lowered_text(lambda alpha, beta: alpha + beta, 1., 2., debug_info=True)
    assert 'loc("alpha")' in text and 'loc("beta")' in text


def test_ops_are_located_at_the_users_line():
    def f(x):
        return lax.sin(x)  # the line the location must name
    line = f.__code__.co_firstlineno + 1
    text = lowered_text(f, np.ones(3, np.float32), debug_info=True)
    assert '"jit(f)/sin"' in text
    assert re.search(rf'"{re.escape(__file__)}":{line}:\d+', text), text


def test_module_attributes_and_visibility():
    def my_fun(x):
        return x + 1
    text = lowered_text(my_fun, np.ones(2, np.float32))
    assert text.startswith("module @jit_my_fun attributes")
    assert "mhlo.num_partitions = 1 : i32" in text and "mhlo.num_replicas = 1 : i32" in text
    assert "func.func public @main" in text
    assert lowered_text(lambda x: x, 1.0).startswith("module @jit__lambda attributes")


def test_unused_inputs_are_pruned_unless_keep_unused():
    def f(used, unused):
        return used * 2

    x = np.ones(3, np.float32)
    assert arg_names(lowered_text(f, x, x, debug_info=True)) == ["used"]
    assert arg_names(lowered_text(f, x, x, debug_info=True, keep_unused=True)) == [
        "used", "unused"]
    assert np.array_equal(plax.jit(f)(x, x + 1), 2 * x)


def test_numpy_constants_are_inlined_and_device_arrays_are_passed():
    table = np.arange(4, dtype=np.float32)
    on_device = plax.device_put(np.full(4, 10, np.float32))
    text = lowered_text(lambda x: x + table + on_device, np.ones(4, np.float32),
                        debug_info=True)
    assert "stablehlo.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, " in text
    args = main_args(text)
    assert len(args) == 2 and "jax.const = true" in args[0] and 'loc("x")' in args[1]
    out = plax.jit(lambda x: x + table + on_device)(np.ones(4, np.float32))
    np.testing.assert_array_equal(out, 11 + table)


def test_donation_attributes():
    def f(a, b, c):
        return a + 1, c.astype(np.int32)

    x, y = np.ones(3, np.float32), np.ones(2, np.float32)
    args = main_args(lowered_text(f, x, x, y, donate_argnums=(0, 2), keep_unused=True))
    assert "tf.aliasing_output = 0 : i32" in args[0]
    assert "tf.aliasing_output" not in args[1] and "buffer_donor" not in args[1]
    assert "jax.buffer_donor = true" in args[2]  # an output of as many elements is free


def test_donations_no_output_can_take_are_dropped_with_jaxs_warning():
    g = plax.jit(lambda a, b: (a.sum(), b * 2), donate_argnums=(0, 1))
    x, y = plax.device_put(np.ones(3, np.float32)), plax.device_put(np.ones(2, np.float32))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[3\]\."):
        args = main_args(g.lower(x, y).as_text())
    assert "donor" not in args[0] and "aliasing" not in args[0]
    assert "tf.aliasing_output = 1 : i32" in args[1]
    total, doubled = g(x, y)  # the lowering above is the call's: warned once
    assert not x.is_deleted() and y.is_deleted()  # as in JAX: only what XLA took goes
    assert float(total) == 3 and np.asarray(doubled).tolist() == [2, 2]


def test_nested_jit_is_one_private_function_called_twice():
    inner = plax.jit(lambda v: lax.sin(v) * 2)

    def outer(x):
        return inner(x) + inner(x)

    text = lowered_text(outer, np.ones(2, np.float32))
    assert text.count("call @_lambda_") == 2, text
    assert text.count("func.func private @_lambda_") == 1


def test_lowered_text_parses_back_and_bytecode_roundtrips():
    lowered = plax.jit(lambda x: lax.cos(x) + 1).lower(np.ones(3, np.float32))
    text = lowered.as_text()
    module = lowered.compiler_ir()
    with mlir_context.make_ir_context():
        assert str(ir.Module.parse(text)) == str(module)
        assert str(ir.Module.parse(mlir_context.module_to_bytecode(module))) == str(module)
    assert "HloModule" in lowered.as_text("hlo")
    with pytest.raises(ValueError, match="unknown dialect"):
        lowered.as_text("llvm")


# --- rule lookup -----------------------------------------------------------------------

def _toy_primitive(name: str) -> Primitive:
    prim = Primitive(f"tests.{name}")
    prim.def_abstract_eval(lambda x: x)
    return prim


def test_missing_lowering_rule_names_primitive_platform_and_owners():
    prim = _toy_primitive("toy_unlowered")
    with pytest.raises(NotImplementedError) as err:
        plax.jit(lambda x: prim.bind(x)).lower(np.ones(2, np.float32))
    message = str(err.value)
    assert "'tests.toy_unlowered'" in message and "'cpu'" in message
    assert "{'abstract_eval': 'test_lowering'}" in message  # the rules and their owners


def test_platform_specific_rule_beats_generic_rule():
    prim = _toy_primitive("toy_platform")
    prim.def_lowering(lambda ctx, x: stablehlo.negate(x))
    prim.def_lowering(lambda ctx, x: stablehlo.sine(x), platform="cpu")
    text = lowered_text(lambda x: prim.bind(x), np.ones(2, np.float32))
    assert "stablehlo.sine" in text and "stablehlo.negate" not in text


def test_ill_typed_rule_result_is_reported():
    prim = _toy_primitive("toy_ill_typed")
    prim.def_lowering(lambda ctx, x: stablehlo.convert(
        ir.RankedTensorType.get([2], ir.F64Type.get()), x))
    with pytest.raises(ValueError, match="'toy_ill_typed'.*tensor<2xf64>.*f32"):
        lowered_text(lambda x: prim.bind(x), np.ones(2, np.float32))


def test_lower_jaxpr_to_module_reports_kept_inputs():
    closed = plax.make_jaxpr(lambda a, b, c: a * c)(1.0, 2.0, 3.0)
    result = lower_jaxpr_to_module(closed, name="f", platform="cpu")
    assert result.kept_var_idx == (0, 2)
    assert result.arg_names == ("a", "c")
    assert result.in_avals == (ShapedArray((), np.float32, weak_type=True),) * 2


# --- every lax primitive, against NumPy ----------------------------------------------------

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
I8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
U8, U16, U32, U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
BOOL = np.dtype(bool)
FLOATS = (F16, bf16, F32, F64)
COMPLEX = (C64, C128)
INEXACT = FLOATS + COMPLEX
SIGNED = (I8, I32, I64)
UNSIGNED = (U8, U32, U64)
INTS = SIGNED + UNSIGNED
ORDERED = (BOOL,) + INTS + FLOATS
NUMBER = INTS + INEXACT
ALL = (BOOL,) + NUMBER
X64_ONLY = {F64, C128, I64, U64}


def is_float(dt) -> bool:
    return dt in FLOATS


def sample(dt, shape=(2, 3), lo=-2.0, hi=2.0, salt=0) -> np.ndarray:
    """Deterministic small test values of dtype `dt` in [lo, hi]."""
    dt = np.dtype(dt)
    rng = np.random.default_rng(zlib.crc32(repr((dt.name, shape, lo, hi, salt)).encode()))
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt in INTS:
        lo = max(lo, 0) if dt in UNSIGNED else lo
        return rng.integers(int(lo), int(hi) + 1, shape).astype(dt)
    if dt in COMPLEX:
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    return rng.uniform(lo, hi, shape).astype(dt)


def wide(x: np.ndarray) -> np.ndarray:
    """Values in float64/complex128 (exact for the narrower inputs) for references."""
    x = np.asarray(x)
    if x.dtype in FLOATS:
        return x.astype(F64)
    if x.dtype in COMPLEX:
        return x.astype(C128)
    return x


class Case(NamedTuple):
    name: str
    prims: tuple[str, ...]  # the primitives this case lowers
    fn: Callable
    ref: Callable  # NumPy reference on `wide` inputs
    dtypes: tuple
    args: Callable  # dtype -> tuple of NumPy inputs
    exact: bool = False  # `ref` takes the inputs in their own dtype; compare exactly


def unary(name, ref, dtypes, lo=-2.0, hi=2.0, fn=None):
    return Case(name, (name,), fn or getattr(lax, name), ref, dtypes,
                lambda dt: (sample(dt, lo=lo, hi=hi),))


def binary(name, ref, dtypes, lo=-2.0, hi=2.0, rhs=None, fn=None, exact=False):
    def args(dt):
        y = rhs(dt) if rhs is not None else sample(dt, lo=lo, hi=hi, salt=1)
        return sample(dt, lo=lo, hi=hi), y
    return Case(name, (name,), fn or getattr(lax, name), ref, dtypes, args, exact)


def _erf_inv(y):
    lo, hi = np.full(y.shape, -6.0), np.full(y.shape, 6.0)
    erf = np.vectorize(math.erf)
    for _ in range(80):
        mid = (lo + hi) / 2
        below = erf(mid) < y
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def _trigamma(x):
    """ψ'(x) = Σ_k 1/(x+k)²: 1000 terms, then the Euler–Maclaurin tail."""
    x = np.array(x, F64)[..., None]
    head = (1 / (x + np.arange(1000)) ** 2).sum(-1)
    z = x[..., 0] + 1000
    return head + 1 / z + 1 / (2 * z**2) + 1 / (6 * z**3) - 1 / (30 * z**5)


def _digamma(x):
    """ψ(x) by the recurrence ψ(x) = ψ(x+1) - 1/x and the asymptotic series."""
    x = np.array(x, F64)
    acc = np.zeros_like(x)
    while np.any(x < 8):
        small = x < 8
        acc -= np.where(small, 1 / x, 0)
        x = np.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    return acc + np.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


def _scipy_special():
    """SciPy's special functions, the references of the special-function cases."""
    import scipy.special
    return scipy.special


def _richardson(f, h=1e-3):
    """f'(0) from central differences at h and h/2, extrapolated (error O(h⁴))."""
    def central(h):
        return (f(h) - f(-h)) / (2 * h)
    return (4 * central(h / 2) - central(h)) / 3


def _as_signed(x):
    return x.view(np.dtype(f"i{x.dtype.itemsize}"))


def _as_unsigned(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _shift_amount(dt):
    return sample(dt, lo=0, hi=np.dtype(dt).itemsize * 8 - 1, salt=1)


def _popcount(x):
    bits = np.unpackbits(_as_unsigned(x).reshape(x.shape + (1,)).view(np.uint8), axis=-1)
    return bits.sum(-1).astype(x.dtype)


def _clz(x):
    width = x.dtype.itemsize * 8
    return np.vectorize(lambda v: width - int(v).bit_length())(_as_unsigned(x)).astype(x.dtype)


def _round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _cum(np_fn, reverse=False):
    def ref(x):
        x = x[::-1] if reverse else x
        out = np_fn(x, axis=0)
        return out[::-1] if reverse else out
    return ref


SCATTER_ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                           scatter_dims_to_operand_dims=(0,))


def _set_rows(x, rows, u):
    x[rows] = u


def _scatter_ref(write, rows):
    """Rows of the update written at `rows`; the last update row is out of bounds
    (index 7), so the scatter drops it."""
    def ref(x, u):
        out = x.copy()
        write(out, rows, u[:len(rows)])
        return out
    return ref


def _top_k_ref(k, axis=-1, largest=True):
    """The k largest (smallest) entries along `axis` and their indices, earlier
    entries first among equals."""
    def ref(x):
        key = -x.astype(F64) if largest else x.astype(F64)
        idx = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
        return np.take_along_axis(x, idx, axis), idx.astype(np.int32)
    return ref


def _mulhi_ref(x, y):
    bits = x.dtype.itemsize * 8
    mask = (1 << bits) - 1  # the two's complement bits of the (possibly negative) high half
    high = [((int(a) * int(b)) >> bits) & mask for a, b in zip(x.ravel(), y.ravel())]
    unsigned = np.array(high, dtype=np.dtype(f"u{x.dtype.itemsize}"))
    return unsigned.view(x.dtype).reshape(x.shape)


def _sub_rows(out, rows, u):
    np.subtract.at(out, rows, u)


def _finite_and_special(dt):
    x = sample(dt)
    x.flat[:3] = [np.inf, -np.inf, np.nan]
    return (x,)


def _convert_to(target):
    """convert_element_type to `target` from several dtypes (complex only to complex:
    dropping the imaginary part warns)."""
    def ref(x):
        if target == BOOL:
            return x != 0
        return (np.trunc(x) if target in INTS and x.dtype in FLOATS else x).astype(target)
    sources = (BOOL, I8, U32, F16, bf16, F32, F64) + ((C64,) if target in COMPLEX else ())
    return Case(f"convert_to_{target.name}", ("convert_element_type",),
                lambda x: lax.convert_element_type(x, target), ref, sources,
                lambda dt: (sample(dt, lo=-3, hi=3),))


def _pad_ref(x):
    """lax.pad with config ((1, 0, 1), (-1, 2, 0)) and padding value 7."""
    rows = np.full((2 * x.shape[0], x.shape[1]), 7, x.dtype)
    rows[1::2] = x
    out = np.full((rows.shape[0], x.shape[1] + 1), 7, x.dtype)
    out[:, :x.shape[1] - 1] = rows[:, 1:]
    return out


def _dus_ref(x, u):
    out = x.copy()
    out[1:3, 2:4] = u  # the start (1, -1) wraps to (1, 3), then is clamped to (1, 2)
    return out


def _windows(x, size=2, stride=1):
    """The `size` x `size` windows of a 2-D array at `stride`, flattened last."""
    v = np.lib.stride_tricks.sliding_window_view(x, (size, size))[::stride, ::stride]
    return v.reshape(v.shape[:2] + (size * size,))


def _gather_ref(t, x):
    return np.take_along_axis(_windows(t), _windows(x).argmax(-1)[..., None], -1)[..., 0]


def _scatter_add_ref(s, x):
    """`s` added at each 2x2 block's maximum of `x`."""
    out = np.zeros(x.shape, s.dtype)
    picked = _windows(x, stride=2).argmax(-1)
    for (i, j), k in np.ndenumerate(picked):
        out[2 * i + k // 2, 2 * j + k % 2] += s[i, j]
    return out


def _conv_ref(lhs, rhs):
    """NHWC lhs padded ((1, 0), (0, 1)), convolved with an HWIO kernel."""
    padded = np.pad(lhs, ((0, 0), (1, 0), (0, 1), (0, 0)))
    v = np.lib.stride_tricks.sliding_window_view(padded, rhs.shape[:2], axis=(1, 2))
    return np.einsum("nhwcij,ijco->nhwo", v, rhs)


_CONV_DNUMS = ("NHWC", "HWIO", "NHWC")


_DOT_DIMS = (((1,), (0,)), ((), ()))
_PAD = ((1, 0, 1), (-1, 2, 0))

CASES: list[Case] = [
    # arithmetic
    binary("add", np.add, ALL[1:]),
    binary("add_any", np.add, (I32, bf16, F32, C64)),
    binary("sub", np.subtract, (I8, U8, F16, bf16, F32, F64, C64)),
    binary("mul", np.multiply, (I16, U16, bf16, F32, C128)),
    binary("div", lambda x, y: np.trunc(x / y).astype(x.dtype) if x.dtype in INTS else x / y,
           (I32, U8, F16, F32, F64, C64),
           rhs=lambda dt: sample(dt, lo=1, hi=3, salt=1)),
    binary("rem", np.fmod, (I32, U32, F32, bf16), rhs=lambda dt: sample(dt, lo=1, hi=3, salt=1)),
    binary("max", np.maximum, (BOOL, I8, U64, F32, F16, C64)),
    binary("min", np.minimum, (BOOL, I64, U8, F64, bf16, C128)),
    binary("pow", np.power, (F32, F64, C64), lo=0.5, hi=2.0),
    binary("atan2", np.arctan2, (F16, F32, F64)),
    binary("nextafter", np.nextafter, (bf16, F32, F64), exact=True),
    binary("complex", lambda x, y: x + 1j * y, (F32, F64)),
    unary("neg", np.negative, (I8, U32, F32, bf16, C64)),
    unary("sign", np.sign, (I32, U8, F32, F64, C64)),
    unary("abs", np.abs, (I8, I64, F16, F32, C64, C128)),
    unary("square", np.square, (I32, U16, F32, C64)),
    Case("integer_pow", ("integer_pow",), lambda x: lax.integer_pow(x, 3),
         lambda x: x ** 3, (I32, F32, C64), lambda dt: (sample(dt),)),
    Case("integer_pow_negative", ("integer_pow",), lambda x: lax.integer_pow(x, -2),
         lambda x: 1 / x ** 2, (F32, F64), lambda dt: (sample(dt, lo=0.5, hi=2),)),
    # rounding and classification
    unary("floor", np.floor, (F16, bf16, F32, F64)),
    unary("ceil", np.ceil, (F32, F64)),
    unary("round", _round_away, (F16, F32, F64)),
    Case("is_finite", ("is_finite",), lax.is_finite, np.isfinite, (F16, bf16, F32, F64),
         _finite_and_special),
    # transcendental
    unary("exp", np.exp, INEXACT),
    unary("exp2", np.exp2, (F32, F64, C64)),
    unary("log", np.log, INEXACT, lo=0.1, hi=3.0),
    unary("log1p", np.log1p, (F32, F64, C64), lo=-0.5, hi=2.0),
    unary("expm1", np.expm1, (F16, F32, F64, C64), lo=-1, hi=1),
    unary("logistic", lambda x: 1 / (1 + np.exp(-x)), (bf16, F32, F64, C64)),
    unary("sqrt", np.sqrt, (F16, F32, F64, C64), lo=0.1, hi=3.0),
    unary("rsqrt", lambda x: 1 / np.sqrt(x), (F32, F64, C64), lo=0.1, hi=3.0),
    unary("cbrt", np.cbrt, (F32, F64)),
    unary("sin", np.sin, INEXACT),
    unary("cos", np.cos, (F16, F32, F64, C64)),
    unary("tan", np.tan, (F32, F64, C64), lo=-1, hi=1),
    unary("asin", np.arcsin, (F32, F64, C64), lo=-0.9, hi=0.9),
    unary("acos", np.arccos, (F32, F64, C64), lo=-0.9, hi=0.9),
    unary("atan", np.arctan, (F32, F64, C64)),
    unary("tanh", np.tanh, (bf16, F32, F64, C64)),
    unary("sinh", np.sinh, (F32, F64, C64)),
    unary("cosh", np.cosh, (F32, F64, C64)),
    unary("asinh", np.arcsinh, (F32, F64, C64)),
    unary("acosh", np.arccosh, (F32, F64, C64), lo=1.1, hi=3.0),
    unary("atanh", np.arctanh, (F32, F64, C64), lo=-0.9, hi=0.9),
    unary("erf", np.vectorize(math.erf), (F16, F32, F64)),
    unary("erfc", np.vectorize(math.erfc), (F32, F64)),
    unary("erf_inv", _erf_inv, (F32, F64), lo=-0.9, hi=0.9),
    unary("lgamma", np.vectorize(math.lgamma), (F32, F64), lo=0.5, hi=4.0),
    unary("digamma", _digamma, (F32, F64), lo=0.5, hi=4.0),
    binary("polygamma", lambda m, x: _trigamma(x), (F32, F64), lo=0.5, hi=4.0,
           fn=lambda m, x: lax.polygamma(1.0, x)),
    # special functions without an XLA op (lowered through lax programs) and CHLO's
    unary("bessel_i0e", lambda x: np.i0(x) * np.exp(-np.abs(x)), (F16, F32, F64), lo=-40, hi=40),
    unary("bessel_i1e", lambda x: _scipy_special().i1e(x), (F32, F64), lo=-40, hi=40),
    binary("zeta", lambda x, q: _scipy_special().zeta(x, q), (F32, F64), lo=1.5, hi=4.0),
    binary("igamma", lambda a, x: _scipy_special().gammainc(a, x), (F32, F64), lo=0.2, hi=8.0),
    binary("igammac", lambda a, x: _scipy_special().gammaincc(a, x), (F32, F64), lo=0.2, hi=8.0),
    binary("igamma_grad_a", lambda a, x: _richardson(
        lambda h: _scipy_special().gammainc(a + h, x)), (F32, F64), lo=0.2, hi=8.0),
    # (a function, not a primitive, in JAX as in plax: it claims no primitive)
    binary("random_gamma_grad", lambda a, x: -_richardson(
        lambda h: _scipy_special().gammainc(a + h, x)) / np.exp(
            (a - 1) * np.log(x) - x - _scipy_special().gammaln(a)), (F32, F64), lo=0.5, hi=8.0
           )._replace(prims=()),
    Case("betainc", ("regularized_incomplete_beta",), lax.betainc,
         lambda a, b, x: _scipy_special().betainc(a, b, x), (F16, F32, F64),
         lambda dt: (sample(dt, lo=0.2, hi=5), sample(dt, lo=0.2, hi=5, salt=1),
                     sample(dt, lo=0.01, hi=0.99, salt=2))),
    # complex parts
    unary("real", np.real, COMPLEX),
    unary("imag", np.imag, COMPLEX),
    unary("conj", lambda x: np.conj(x).astype(C128), (F32, C64, C128)),
    # bitwise
    binary("and", np.bitwise_and, (BOOL, I8, U32), fn=lax.bitwise_and),
    binary("or", np.bitwise_or, (BOOL, I32, U8), fn=lax.bitwise_or),
    binary("xor", np.bitwise_xor, (BOOL, I64, U16), fn=lax.bitwise_xor),
    unary("not", np.invert, (BOOL, I8, U64), fn=lax.bitwise_not),
    binary("shift_left", np.left_shift, (I32, U8, U64), rhs=_shift_amount),
    binary("shift_right_logical",
           lambda x, y: (_as_unsigned(x) >> _as_unsigned(y)).view(x.dtype), (I32, I8, U32),
           rhs=_shift_amount, lo=-100, hi=100),
    binary("shift_right_arithmetic",
           lambda x, y: (_as_signed(x) >> _as_signed(y)).view(x.dtype), (I16, U8, I64),
           rhs=_shift_amount, lo=-100, hi=200),
    unary("population_count", _popcount, (I8, U32, I64), lo=-50, hi=100),
    unary("clz", _clz, (U8, I32, U64), lo=0, hi=100),
    # comparisons and selection
    binary("eq", np.equal, (BOOL, I32, F32, C64)),
    binary("ne", np.not_equal, (U8, bf16, C128)),
    binary("lt", np.less, (BOOL, I8, F64)),
    binary("le", np.less_equal, (U32, F16)),
    binary("gt", np.greater, (I64, F32)),
    binary("ge", np.greater_equal, (U16, bf16)),
    Case("select_n", ("select_n",), lambda p, a, b: lax.select_n(p, a, b),
         lambda p, a, b: np.where(p, b, a), (BOOL, I32, F32, C64),
         lambda dt: (sample(BOOL, salt=2), sample(dt), sample(dt, salt=1))),
    Case("select_n_int32", ("select_n",), lambda w, a, b, c: lax.select_n(w, a, b, c),
         lambda w, a, b, c: np.choose(w, [a, b, c]), (F32, U8),
         lambda dt: (sample(I32, lo=0, hi=2), sample(dt), sample(dt, salt=1),
                     sample(dt, salt=2))),
    Case("clamp", ("clamp",), lambda x: lax.clamp(np.asarray(-1, x.dtype), x,
                                                  np.asarray(1, x.dtype)),
         lambda x: np.clip(x, -1, 1), (I8, F32, F64), lambda dt: (sample(dt),)),
    # conversions
    _convert_to(F32), _convert_to(I32), _convert_to(BOOL), _convert_to(C64),
    Case("bitcast_same_width", ("bitcast_convert_type",),
         lambda x: lax.bitcast_convert_type(x, np.dtype(f"i{x.dtype.itemsize}")),
         lambda x: x.view(np.dtype(f"i{x.dtype.itemsize}")), (F16, F32, F64, U32),
         lambda dt: (sample(dt),), exact=True),
    Case("bitcast_narrower", ("bitcast_convert_type",),
         lambda x: lax.bitcast_convert_type(x, np.uint8),
         lambda x: x.reshape(x.shape + (1,)).view(np.uint8), (F32, I16),
         lambda dt: (sample(dt),), exact=True),
    Case("copy", ("copy",), lambda x: lax.copy_p.bind(x), lambda x: x, (BOOL, I32, bf16, C64),
         lambda dt: (sample(dt),)),
    Case("stop_gradient", ("stop_gradient",), lambda x: lax.stop_gradient(x), lambda x: x,
         (I32, F32), lambda dt: (sample(dt),)),
    Case("gather", ("gather",),
         lambda x: lax.gather(x, np.array([[2], [0], [2]], np.int32),
                              lax.GatherDimensionNumbers(offset_dims=(1,),
                                                         collapsed_slice_dims=(0,),
                                                         start_index_map=(0,)), (1, 4)),
         lambda x: x[[2, 0, 2]], (BOOL, I32, F32, C64), lambda dt: (sample(dt, (3, 4)),)),
    Case("scatter_add", ("scatter-add",),
         lambda x, u: lax.scatter_add(x, np.array([[2], [0], [2], [7]], np.int32), u,
                                      SCATTER_ROWS),
         _scatter_ref(np.add.at, [2, 0, 2]), (I32, F32, C64),
         lambda dt: (sample(dt, (3, 4)), sample(dt, (4, 4), salt=1))),
    Case("scatter_mul", ("scatter-mul",),
         lambda x, u: lax.scatter_mul(x, np.array([[2], [0], [2], [7]], np.int32), u,
                                      SCATTER_ROWS),
         _scatter_ref(np.multiply.at, [2, 0, 2]), (I32, F32),
         lambda dt: (sample(dt, (3, 4)), sample(dt, (4, 4), salt=1))),
    Case("scatter_min_max", ("scatter-min", "scatter-max"),
         lambda x, u: [f(x, np.array([[2], [0], [2], [7]], np.int32), u, SCATTER_ROWS)
                       for f in (lax.scatter_min, lax.scatter_max)],
         lambda x, u: [_scatter_ref(f.at, [2, 0, 2])(x, u) for f in (np.minimum, np.maximum)],
         (I8, U32, F32), lambda dt: (sample(dt, (3, 4)), sample(dt, (4, 4), salt=1))),
    Case("split", ("split",), lambda x: lax.split(x, (1, 0, 3), 1),
         lambda x: (x[:, :1], x[:, 1:1], x[:, 1:]), (BOOL, I32, F32, C64),
         lambda dt: (sample(dt, (2, 4)),)),
    Case("stack", ("stack",), lambda x, y: lax.stack([x, y, x], 1),
         lambda x, y: np.stack([x, y, x], 1), (BOOL, U8, F16, C64),
         lambda dt: (sample(dt), sample(dt, salt=1))),
    Case("unstack", ("unstack",), lambda x: lax.unstack(x, 1),
         lambda x: tuple(x[:, i] for i in range(x.shape[1])), (I8, F32),
         lambda dt: (sample(dt),)),
    Case("tile", ("tile",), lambda x: lax.tile(x, (2, 3)), lambda x: np.tile(x, (2, 3)),
         (BOOL, I32, bf16, C64), lambda dt: (sample(dt),)),
    Case("scatter_sub", ("scatter-sub",),
         lambda x, u: lax.scatter_sub(x, np.array([[2], [0], [2], [7]], np.int32), u,
                                      SCATTER_ROWS),
         _scatter_ref(_sub_rows, [2, 0, 2]), (I32, U8, F32, C64),
         lambda dt: (sample(dt, (3, 4), 0, 8), sample(dt, (4, 4), 0, 2, salt=1))),
    Case("optimization_barrier", ("optimization_barrier",),
         lambda x, y: lax.optimization_barrier((x, [y])), lambda x, y: (x, [y]), (BOOL, F32),
         lambda dt: (sample(dt), sample(dt, salt=1))),
    Case("reduce_precision", ("reduce_precision",),
         lambda x: (lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7)),
         lambda x: (x.astype(np.float16), x.astype(bf16)), (F32, F64),
         lambda dt: (sample(dt, lo=-100, hi=100),), exact=True),
    Case("mulhi", ("mulhi",), lax.mulhi, _mulhi_ref, (I8, U8, I32, U32, I64, U64),
         lambda dt: (sample(dt, lo=-120, hi=120), sample(dt, lo=-120, hi=120, salt=1)),
         exact=True),
    Case("mulhi_extremes", ("mulhi",), lax.mulhi, _mulhi_ref, (I64, U64, I32),
         lambda dt: (np.array([np.iinfo(dt).max, np.iinfo(dt).min, np.iinfo(dt).max, 3], dt),
                     np.array([np.iinfo(dt).max, np.iinfo(dt).max, np.iinfo(dt).min, 7], dt)),
         exact=True),
    Case("stage", ("stage",), lax.stage_p.bind, lambda x: x, (BOOL, I32, F32),
         lambda dt: (sample(dt),)),
    Case("platform_index", ("platform_index",),
         lambda x: lax.platform_dependent(x, tpu=lambda v: v, cpu=lambda v: v * 2,
                                          default=lambda v: v * 3),
         lambda x: x * 2, (I32, F32), lambda dt: (sample(dt),)),
    Case("scatter", ("scatter",),
         lambda x, u: lax.scatter(x, np.array([[2], [0], [1], [7]], np.int32), u,
                                  SCATTER_ROWS),
         _scatter_ref(_set_rows, [2, 0, 1]), (BOOL, I32, F32),
         lambda dt: (sample(dt, (3, 4)), sample(dt, (4, 4), salt=1))),
    # creation
    Case("iota", ("iota",), lambda x: lax.add(lax.broadcasted_iota(x.dtype, (2, 4), 1), x),
         lambda x: np.broadcast_to(np.arange(4), (2, 4)).astype(x.dtype) + x,
         (I32, U8, F16, F32, F64), lambda dt: (sample(dt, (2, 1)),)),
    # cumulative
    Case("cumsum", ("cumsum",), lambda x: lax.cumsum(x, 0), _cum(np.cumsum),
         (I32, U8, F32, C64), lambda dt: (sample(dt, (4, 2)),)),
    Case("cumsum_reverse", ("cumsum",), lambda x: lax.cumsum(x, 0, reverse=True),
         _cum(np.cumsum, reverse=True), (F32,), lambda dt: (sample(dt, (4, 2)),)),
    Case("cumprod", ("cumprod",), lambda x: lax.cumprod(x, 0), _cum(np.cumprod),
         (I32, F64, C64), lambda dt: (sample(dt, (4, 2)),)),
    Case("cummax", ("cummax",), lambda x: lax.cummax(x, 0), _cum(np.maximum.accumulate),
         (BOOL, I8, U32, F32, bf16), lambda dt: (sample(dt, (4, 2)),)),
    Case("cummin", ("cummin",), lambda x: lax.cummin(x, 0), _cum(np.minimum.accumulate),
         (I64, F16, F64), lambda dt: (sample(dt, (4, 2)),)),
    Case("cumlogsumexp", ("cumlogsumexp",), lambda x: lax.cumlogsumexp(x, 0),
         _cum(np.logaddexp.accumulate), (F32, F64), lambda dt: (sample(dt, (4, 2)),)),
    # contractions
    Case("dot_general", ("dot_general",), lambda a, b: lax.dot_general(a, b, _DOT_DIMS),
         lambda a, b: a @ b, (I32, U8, bf16, F32, F64, C64),
         lambda dt: (sample(dt, (2, 3)), sample(dt, (3, 2), salt=1))),
    Case("dot_general_batched", ("dot_general",),
         lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))),
                                      preferred_element_type=np.float32),
         lambda a, b: np.einsum("bij,bjk->bik", a, b), (F16, F32),
         lambda dt: (sample(dt, (2, 2, 3)), sample(dt, (2, 3, 2), salt=1))),
    # reductions
    Case("reduce_sum", ("reduce_sum",), lambda x: lax.reduce_sum(x, (1,)),
         lambda x: x.sum(1), (I8, U32, F32, F64, C64), lambda dt: (sample(dt),)),
    Case("reduce_prod", ("reduce_prod",), lambda x: lax.reduce_prod(x, (0,)),
         lambda x: x.prod(0), (I32, F32, C128), lambda dt: (sample(dt),)),
    Case("reduce_max", ("reduce_max",), lambda x: lax.reduce_max(x, (0, 1)),
         lambda x: x.max((0, 1)), (BOOL, I16, U8, F16, F32), lambda dt: (sample(dt),)),
    Case("reduce_min", ("reduce_min",), lambda x: lax.reduce_min(x, (1,)),
         lambda x: x.min(1), (I64, bf16, F64), lambda dt: (sample(dt),)),
    Case("reduce_and", ("reduce_and",), lambda x: lax.reduce_and(x, (1,)),
         lambda x: np.bitwise_and.reduce(x, 1), (BOOL, U8, I32), lambda dt: (sample(dt),)),
    Case("reduce_or", ("reduce_or",), lambda x: lax.reduce_or(x, (0,)),
         lambda x: np.bitwise_or.reduce(x, 0), (BOOL, I8), lambda dt: (sample(dt),)),
    Case("reduce_xor", ("reduce_xor",), lambda x: lax.reduce_xor(x, (0, 1)),
         lambda x: np.bitwise_xor.reduce(x.ravel()), (BOOL, U32), lambda dt: (sample(dt),)),
    Case("argmax", ("argmax",), lambda x: lax.argmax(x, 1, np.int32),
         lambda x: np.argmax(x, 1).astype(np.int32), (BOOL, I8, F32, bf16),
         lambda dt: (sample(dt),)),
    Case("argmin", ("argmin",), lambda x: lax.argmin(x, 0, np.int32),
         lambda x: np.argmin(x, 0).astype(np.int32), (U16, F64), lambda dt: (sample(dt),)),
    # shapes
    Case("broadcast_in_dim", ("broadcast_in_dim",),
         lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
         lambda x: np.broadcast_to(x, (4, 2, 3)), (BOOL, I8, bf16, C64),
         lambda dt: (sample(dt),)),
    Case("concatenate", ("concatenate",), lambda a, b: lax.concatenate([a, b, a], 1),
         lambda a, b: np.concatenate([a, b, a], 1), (BOOL, U8, F32),
         lambda dt: (sample(dt), sample(dt, (2, 1), salt=1))),
    Case("pad", ("pad",), lambda x: lax.pad(x, np.asarray(7, x.dtype), _PAD), _pad_ref,
         (I32, F16, F32), lambda dt: (sample(dt),)),
    Case("reshape", ("reshape",), lambda x: lax.reshape(x, (3, 2)),
         lambda x: x.reshape(3, 2), (BOOL, I64, F32), lambda dt: (sample(dt),)),
    Case("reshape_transposed", ("reshape",), lambda x: lax.reshape(x, (6,), (1, 0)),
         lambda x: x.T.reshape(6), (U8, F64), lambda dt: (sample(dt),)),
    Case("rev", ("rev",), lambda x: lax.rev(x, (1,)), lambda x: x[:, ::-1],
         (I8, bf16, C64), lambda dt: (sample(dt),)),
    Case("squeeze", ("squeeze",), lambda x: lax.squeeze(x, (0, 2)),
         lambda x: x[0, :, 0], (BOOL, F32), lambda dt: (sample(dt, (1, 3, 1)),)),
    Case("transpose", ("transpose",), lambda x: lax.transpose(x, (2, 0, 1)),
         lambda x: x.transpose(2, 0, 1), (I32, F16, C128),
         lambda dt: (sample(dt, (2, 3, 2)),)),
    # slicing
    Case("slice", ("slice",), lambda x: lax.slice(x, (0, 1), (2, 4), (1, 2)),
         lambda x: x[0:2, 1:4:2], (BOOL, U32, F32), lambda dt: (sample(dt, (3, 4)),)),
    Case("dynamic_slice", ("dynamic_slice",),
         lambda x, i: lax.dynamic_slice(x, (i, np.int32(1)), (2, 2)),
         lambda x, i: x[min(int(i), 1):min(int(i), 1) + 2, 1:3], (I8, F64, C64),
         lambda dt: (sample(dt, (3, 4)), np.int32(5))),
    Case("dynamic_update_slice", ("dynamic_update_slice",),
         lambda x, u: lax.dynamic_update_slice(x, u, (np.int32(1), np.int32(-1))),
         _dus_ref, (BOOL, I32, bf16), lambda dt: (sample(dt, (3, 4)), sample(dt, (2, 2), salt=1))),
    # sorting
    Case("sort", ("sort",), lambda x: lax.sort(x, 1), lambda x: np.sort(x, 1),
         (BOOL, I32, U8, F32, F16), lambda dt: (sample(dt),)),
    Case("sort_key_val", ("sort",), lambda k, v: lax.sort_key_val(k, v, 0),
         lambda k, v: (np.sort(k, 0, kind="stable"),
                       np.take_along_axis(v, np.argsort(k, 0, kind="stable"), 0)),
         (I8, F64), lambda dt: (sample(dt, (5, 2)), sample(F32, (5, 2), salt=1))),
    Case("top_k", ("top_k",), lambda x: lax.top_k(x, 2), _top_k_ref(2),
         (I8, U8, I32, F16, F32, bf16), lambda dt: (sample(dt, (2, 4)),), exact=True),
    Case("top_k_axis", ("top_k",), lambda x: lax.top_k(x, 1, axis=0), _top_k_ref(1, axis=0),
         (F32,), lambda dt: (sample(dt, (3, 2)),), exact=True),
    Case("approx_max_k", ("approx_top_k",), lambda x: lax.approx_max_k(x, 3), _top_k_ref(3),
         (F32, bf16), lambda dt: (sample(dt, (2, 5)),), exact=True),
    Case("approx_min_k", ("approx_top_k",), lambda x: lax.approx_min_k(x, 2, 0),
         _top_k_ref(2, axis=0, largest=False), (F16, F64), lambda dt: (sample(dt, (4, 3)),),
         exact=True),
    Case("total_order", ("eq_to", "le_to", "lt_to"),
         lambda x, y: (lax.eq_to_p.bind(x, y), lax.le_to_p.bind(x, y), lax.lt_to_p.bind(x, y)),
         lambda x, y: (x == y, x <= y, x < y), (BOOL, I32, U8, F32),
         lambda dt: (sample(dt, lo=-1, hi=1), sample(dt, lo=-1, hi=1, salt=1))),
    # windows and convolutions
    Case("reduce_window_sum", ("reduce_window_sum",),
         lambda x: lax.reduce_window(x, np.asarray(0, x.dtype), lax.add, (2, 2), (1, 1)),
         lambda x: _windows(x).sum(-1), (I32, F16, F32, C64), lambda dt: (sample(dt, (3, 4)),)),
    Case("reduce_window_max", ("reduce_window_max",), lambda x: lax.reduce_window_max(x, (2, 2)),
         lambda x: _windows(x).max(-1), (BOOL, I8, bf16, F32), lambda dt: (sample(dt, (3, 4)),)),
    Case("reduce_window_min", ("reduce_window_min",), lambda x: lax.reduce_window_min(x, (2, 2)),
         lambda x: _windows(x).min(-1), (U8, F64), lambda dt: (sample(dt, (3, 4)),)),
    Case("reduce_window", ("reduce_window",),
         lambda x: lax.reduce_window(x, np.asarray(1, x.dtype), lax.mul, (2, 2), (1, 1)),
         lambda x: _windows(x).prod(-1), (I32, F32), lambda dt: (sample(dt, (3, 4)),)),
    Case("select_and_gather_add", ("select_and_gather_add",),
         lambda t, x: lax.select_and_gather_add(t, x, lax.ge_p, (2, 2), (1, 1), "VALID"),
         _gather_ref, (F32, F64), lambda dt: (sample(dt, (3, 4)), sample(dt, (3, 4), salt=1))),
    Case("select_and_scatter_add", ("select_and_scatter_add",),
         lambda s, x: lax.select_and_scatter_add(s, x, lax.ge_p, (2, 2), (2, 2), "VALID"),
         _scatter_add_ref, (F32,), lambda dt: (sample(dt, (2, 2)), sample(dt, (4, 4), salt=1))),
    Case("select_and_scatter", ("select_and_scatter",),
         lambda s, x: _select_and_scatter(x, lax.ge, (2, 2), (2, 2), ((0, 0), (0, 0)), s,
                                          np.zeros((), s.dtype)[()], lax.add),
         _scatter_add_ref, (F32,), lambda dt: (sample(dt, (2, 2)), sample(dt, (4, 4), salt=1))),
    Case("reduce", ("reduce",), lambda x: lax.reduce(x, np.ones((), x.dtype)[()],
                                                     lambda a, b: a * b + 0, (1,)),
         lambda x: x.prod(1), (F32, I32), lambda dt: (sample(dt, (2, 3)),)),
    Case("composite", ("composite",),
         lambda x: lax.composite(lambda v, **_: lax.sin(v) * v, name="test.xsinx")(x, k=1),
         lambda x: np.sin(x) * x, (F32,), lambda dt: (sample(dt),)),
    Case("conv_general_dilated", ("conv_general_dilated",),
         lambda x, k: lax.conv_general_dilated(x, k, (1, 1), ((1, 0), (0, 1)),
                                               dimension_numbers=_CONV_DNUMS),
         _conv_ref, (I32, F16, F32, C64),
         lambda dt: (sample(dt, (1, 4, 3, 2)), sample(dt, (2, 2, 2, 3), salt=1))),
    # Fourier transforms (tests/test_fft.py checks them further)
    Case("fft", ("fft",), lambda x: lax.fft(x, "fft", (3,)), np.fft.fft, (C64, C128),
         lambda dt: (sample(dt),)),
    Case("ifft", ("fft",), lambda x: lax.fft(x, lax.FftType.IFFT, (2, 3)), np.fft.ifft2, (C64,),
         lambda dt: (sample(dt),)),
    Case("rfft", ("fft",), lambda x: lax.fft(x, "rfft", (2, 3)), np.fft.rfft2, (F32, F64),
         lambda dt: (sample(dt),)),
    Case("irfft", ("fft",), lambda x: lax.fft(x, "irfft", (4,)), lambda x: np.fft.irfft(x, 4),
         (C128,), lambda dt: (sample(dt),)),
]



CASE_PARAMS = [pytest.param(case, dt, id=f"{case.name}-{dt.name}")
               for case in CASES for dt in case.dtypes]


def test_every_lax_primitive_has_a_case():
    primitives = {p.name for p in vars(lax).values() if isinstance(p, Primitive)}
    covered = {name for case in CASES for name in case.prims}
    assert primitives - covered == EXEMPT | NO_VALUES  # checked in their own test files


def _applied(jaxpr) -> set[str]:
    """The primitives `jaxpr` applies, in the jits it calls too (`lax.fft` is one)."""
    return {name for eqn in jaxpr.eqns
            for name in (eqn.primitive.name, *(n for sub in subjaxprs(eqn) for n in _applied(sub)))}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_applies_the_primitives_it_claims(case):
    used = set()
    for dt in case.dtypes:
        with plax.enable_x64(dt in X64_ONLY):
            jaxpr = plax.make_jaxpr(case.fn)(*case.args(dt))
        used |= _applied(jaxpr.jaxpr)
    assert set(case.prims) <= used


_TOLERANCE = {F16: 4e-3, bf16: 2e-2, F32: 1e-5, F64: 1e-9, C64: 1e-5, C128: 1e-9}


def assert_matches(got, want, case: Case) -> None:
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            assert_matches(g, w, case)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if case.exact or got.dtype not in _TOLERANCE:
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    else:
        tol = _TOLERANCE[got.dtype]
        np.testing.assert_allclose(got.astype(C128 if got.dtype in COMPLEX else F64),
                                   want, rtol=tol, atol=tol)


def reference(case: Case, args):
    return case.ref(*(args if case.exact else map(wide, args)))


def assert_on_device(outs, device) -> None:
    for out in plax.tree_util.tree_leaves(outs):
        assert out.sharding.device_set == {device} and out.committed


@pytest.fixture(scope="module")
def device3():
    return plax.devices()[3]


@pytest.mark.parametrize("case,dt", CASE_PARAMS)
def test_primitive_eagerly(case, dt, device3):
    with plax.enable_x64(dt in X64_ONLY):
        args = case.args(dt)
        got = case.fn(*plax.device_put(args, device3))
    assert_on_device(got, device3)
    assert_matches(got, reference(case, args), case)


@pytest.fixture(scope="module")
def jitted_cases(device3):
    """Per dtype: every case of that dtype computed by ONE jitted function on device 3,
    so each dtype costs a single compilation."""
    results = {}

    def run(dt):
        if dt not in results:
            cases = [c for c in CASES if dt in c.dtypes]
            with plax.enable_x64(dt in X64_ONLY):
                inputs = {c.name: c.args(dt) for c in cases}
                fn = plax.jit(lambda ins: {c.name: c.fn(*ins[c.name]) for c in cases})
                results[dt] = (inputs, fn(plax.device_put(inputs, device3)))
        return results[dt]
    return run


@pytest.mark.parametrize("case,dt", CASE_PARAMS)
def test_primitive_under_jit(case, dt, jitted_cases, device3):
    inputs, outputs = jitted_cases(dt)
    assert_on_device(outputs[case.name], device3)
    assert_matches(outputs[case.name], reference(case, inputs[case.name]), case)
