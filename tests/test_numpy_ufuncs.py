"""plax.numpy elementwise functions against NumPy: values, result dtypes (JAX's
promotion rules), weak types, broadcasting and bad inputs.

Values are computed in one jitted function per input dtype (compilation is the
cost); the NumPy reference is evaluated in float64/complex128 on the same inputs.
"""
import inspect
import operator
import pickle
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from jax_differential import assert_same_bits_as_jax, requires_jax
from jax_reference import run_reference

import plax
import plax.numpy as jnp
from plax.extend.config import numpy_rank_promotion

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I16, I32, U8, BOOL = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, bool))

_REALS = [-2.5, -1.0, -0.5, -0.0, 0.25, 0.5, 1.0, 3.0]


def sample(dtype, values=None) -> np.ndarray:
    """A small array of `dtype` with negative, zero, fractional and positive values."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.array([True, False, True, True, False, False, True, False])
    if dtype.kind in "iu":
        ints = [-3, -1, 0, 1, 2, 5, 7, -8] if values is None else values
        return np.array([abs(v) for v in ints] if dtype.kind == "u" else ints, dtype)
    reals = _REALS if values is None else values
    if dtype.kind == "c":
        return np.array([r + 1j * i for r, i in zip(reals, reversed(reals))], dtype)
    return np.array(reals, dtype)


def rtol(dtype) -> float:
    return {F16: 2e-3, BF16: 1.6e-2, C64: 2e-5}.get(np.dtype(dtype), 2e-5)


def wide(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == BF16 else x


def assert_close(actual, expected, dtype, what):
    actual = np.asarray(actual)
    assert actual.dtype == np.dtype(dtype), f"{what}: dtype {actual.dtype}, expected {dtype}"
    expected = np.asarray(expected)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype), err_msg=what)
    else:
        tol = rtol(dtype)
        np.testing.assert_allclose(wide(actual), wide(expected), rtol=tol, atol=tol,
                                   equal_nan=True, err_msg=what)


def inexact(dtype):
    """JAX's float result for integer/bool inputs (x64 off): float32."""
    return F32 if np.dtype(dtype).kind in "biu" else np.dtype(dtype)


# --- unary functions ---------------------------------------------------------------------

FLOAT_FNS = ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
             "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
             "arccosh", "arctanh", "deg2rad", "rad2deg", "sinc", "reciprocal", "rint"]
COMPLEX_FLOAT_FNS = ["sqrt", "exp", "expm1", "log", "log1p", "sin", "cos", "tanh",
                     "reciprocal", "log10", "rint"]
SAME_DTYPE_FNS = ["negative", "positive", "absolute", "sign", "floor", "ceil", "trunc", "fix",
                  "conj", "real"]
BOOL_FNS = ["isnan", "isinf", "isfinite", "signbit", "logical_not"]
UNARY_DTYPES = [BOOL, I8, I32, U8, F16, BF16, F32, C64]


def _unary_cases(dtype):
    kind = np.dtype(dtype).kind
    names = {}
    for name in (COMPLEX_FLOAT_FNS if kind == "c" else FLOAT_FNS):
        names[name] = inexact(dtype)
    for name in SAME_DTYPE_FNS:
        if kind == "b" and name in ("negative", "sign"):
            continue
        if kind == "c" and name in ("floor", "ceil", "trunc", "fix"):
            continue
        names[name] = F32 if (kind == "c" and name in ("absolute", "real")) else dtype
    for name in BOOL_FNS:
        if not (kind == "c" and name == "signbit"):
            names[name] = BOOL
    names["square"] = I32 if kind == "b" else dtype
    if kind == "c":
        names.update(imag=F32, angle=F32)
    return names


@pytest.mark.parametrize("dtype", UNARY_DTYPES, ids=str)
def test_unary_functions_match_numpy(dtype):
    cases = _unary_cases(dtype)
    x = sample(dtype)
    outs = plax.jit(lambda v: {name: getattr(jnp, name)(v) for name in cases})(x)
    for name, out_dtype in cases.items():
        ref_input = wide(x.astype(out_dtype) if out_dtype not in (BOOL, I32) and
                         x.dtype.kind in "biu" else x)
        with np.errstate(all="ignore"):
            # NumPy has no bool loops for these; on bool they are the identity.
            expected = (x if x.dtype == BOOL and name in SAME_DTYPE_FNS else
                        getattr(np, name)(ref_input))
        assert_close(outs[name], expected, out_dtype, f"{name}({dtype})")
        assert not outs[name].weak_type, name


def test_signbit_sees_negative_zero_and_nan_sign():
    x = np.array([-0.0, 0.0, -np.nan, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(jnp.signbit(x), np.signbit(x))


# --- binary functions -----------------------------------------------------------------------

ARITH = ["add", "subtract", "multiply", "maximum", "minimum", "floor_divide", "remainder",
         "fmod", "power"]
FLOAT_ONLY = ["true_divide", "float_power", "arctan2", "hypot", "logaddexp", "copysign",
              "heaviside", "fmax", "fmin"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_xor"]
BITS = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]

# (x dtype, y dtype, promoted dtype): JAX's lattice, which differs from NumPy's
# (int8 + uint8 -> int16 as in NumPy, but int32 + float16 -> float16 and
# bfloat16 + float16 -> float32).
BINARY_PAIRS = [(F32, F32, F32), (I32, I32, I32), (I8, U8, I16), (U8, U8, U8),
                (I32, F16, F16), (BF16, F16, F32), (F32, C64, C64), (BOOL, I8, I8),
                (BOOL, BOOL, BOOL)]


def _binary_inputs(dtype_x, dtype_y):
    x = sample(dtype_x)
    # Nonzero divisors, and small non-negative exponents/shift counts for integers.
    y = sample(dtype_y, values=[2, -3, 1, 3, -1, 2, 1, 3] if dtype_y.kind in "iu" else
               [2.0, -3.0, 0.5, 3.0, -1.0, 1.5, 0.25, -2.0])
    return x, y


def _binary_cases(promoted):
    kind = promoted.kind
    if kind == "b":
        names = {n: BOOL for n in ["add", "multiply", "maximum", "minimum", *COMPARE,
                                   "bitwise_and", "bitwise_or", "bitwise_xor"]}
        names.update(true_divide=F32, power=I32)
        return names
    names = {n: promoted for n in ARITH}
    names.update({n: inexact(promoted) for n in ["true_divide", "float_power"]})
    names.update({n: BOOL for n in COMPARE})
    if kind in "iu":
        names.update({n: promoted for n in BITS})
    if kind in "f":
        names.update({n: promoted for n in FLOAT_ONLY})
    if kind == "c":
        for n in ("floor_divide", "remainder", "fmod", "maximum", "minimum"):
            names.pop(n)
    return names


def _numpy_binary(name, x, y, promoted):
    np_fn = getattr(np, name)
    if promoted.kind in "biu" and name not in ("true_divide", "float_power"):
        if name == "power":
            y = np.abs(y.astype(promoted))
        if promoted == BOOL and name == "power":
            x, y = x.astype(I32), y.astype(I32)
        return np_fn(x.astype(promoted), y.astype(promoted) if name != "power" else y)
    return np_fn(wide(x.astype(promoted)), wide(y.astype(promoted)))


@pytest.mark.parametrize("dtype_x,dtype_y,promoted", BINARY_PAIRS, ids=str)
def test_binary_functions_match_numpy(dtype_x, dtype_y, promoted):
    cases = _binary_cases(promoted)
    x, y = _binary_inputs(dtype_x, dtype_y)

    def f(a, b):
        outs = {}
        for name in cases:
            exponent = jnp.abs(b) if (name == "power" and promoted.kind in "iu") else b
            outs[name] = getattr(jnp, name)(a, exponent)
        return outs

    outs = plax.jit(f)(x, y)
    for name, out_dtype in cases.items():
        with np.errstate(all="ignore"):
            expected = _numpy_binary(name, x, y, promoted)
        actual = outs[name]
        if name in ("power", "float_power") and promoted.kind == "c":
            # XLA's complex pow gives nan for a zero base (NumPy: 0); compare the rest.
            actual, expected = np.asarray(actual)[x != 0], expected[x != 0]
        assert_close(actual, expected, out_dtype, f"{name}({dtype_x}, {dtype_y})")


def test_float_floor_divide_and_remainder_follow_numpy_edge_cases():
    a = np.array([-7.5, -3, -0.0, 0.0, 2, 7.5, np.inf, -np.inf, np.nan], np.float32)
    b = np.array([2, -2, 0.0, 3, -3, 1e-3, np.inf, -np.inf, 1], np.float32)
    x, y = (m.ravel() for m in np.meshgrid(a, b))
    q, r = plax.jit(jnp.divmod)(x, y)
    with np.errstate(all="ignore"):
        expected_q, expected_r = np.divmod(x, y)
    np.testing.assert_array_equal(np.asarray(q), expected_q)
    np.testing.assert_array_equal(np.asarray(r), expected_r)
    # A zero remainder is signed as JAX's (C's fmod: the dividend's sign), not NumPy's
    # (the divisor's); test_bits_vs_jax.py checks every bit against JAX.
    zero = np.asarray(r) == 0
    np.testing.assert_array_equal(np.signbit(np.asarray(r))[zero],
                                  np.signbit(np.fmod(x, y))[zero])


@pytest.mark.parametrize("divisor", [2, -2, 2.0, 0.0])
def test_divmod_of_weak_scalars_follows_numpy(divisor):
    """A Python divisor stays a weak Python scalar after promotion; the float path
    compares it with zeros of its own type (it raised a dtype mismatch)."""
    for dividend in (jnp.asarray(1.5), jnp.asarray(-1.5), 1.5):
        q, r = jnp.divmod(dividend, divisor)
        with np.errstate(all="ignore"):
            want_q, want_r = np.divmod(np.float32(dividend), np.float32(divisor))
        np.testing.assert_array_equal([q, r, jnp.remainder(dividend, divisor)],
                                      [want_q, want_r, want_r])
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(dividend % jnp.asarray(divisor), want_r)


def test_integer_power_of_arrays_including_negative_exponents():
    base = np.array([2, -2, 1, -1, 3, 0, 7, -1], np.int32)
    exponent = np.array([10, 3, -5, -3, -1, 0, 0, -2], np.int32)
    out = np.asarray(plax.jit(jnp.power)(base, exponent))
    # Negative exponents: 0, except for bases 1 and -1 (as exact integer arithmetic).
    np.testing.assert_array_equal(out, [1024, -8, 1, -1, 0, 1, 1, 1])


def test_static_integer_exponent_uses_integer_pow_and_keeps_dtype():
    closed = plax.make_jaxpr(lambda x: (x ** 3, x ** 2.0))(np.ones(3, np.float16))
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["integer_pow", "pow"]
    assert all(a.dtype == F16 for a in closed.out_avals)
    with pytest.raises(ValueError, match="negative integer powers"):
        jnp.power(np.array([2], np.int32), -1)


def test_round_with_decimals_rounds_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.25, 123.456, -2.675], np.float32)
    ints = np.array([125, 135, -125, 14, 16, -16], np.int32)
    outs = plax.jit(lambda a, i: (jnp.round(a), jnp.round(a, 1), jnp.round(a, -1),
                                  jnp.round(i, -1), jnp.round(i, 1)))(x, ints)
    np.testing.assert_allclose(outs[0], np.round(x))
    np.testing.assert_allclose(outs[1], np.round(x, 1), rtol=1e-6)
    np.testing.assert_allclose(outs[2], np.round(x, -1))
    np.testing.assert_array_equal(outs[3], np.round(ints, -1))
    np.testing.assert_array_equal(outs[4], ints)
    assert outs[3].dtype == I32


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("decimals", [-1, -2, -3])
def test_integers_rounded_to_tens_are_numpy_s_for_every_value(dtype, decimals):
    """NumPy's answers, wrapped into the dtype where the multiple is out of range
    (int8 -125 rounds to -120 through -130; was 126). JAX 0.10.2 raises
    NotImplementedError for negative decimals of integers."""
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1).astype(dtype)
    expected = np.round(x.astype(np.int64), decimals).astype(dtype)
    np.testing.assert_array_equal(jnp.round(x, decimals), expected)
    np.testing.assert_array_equal(plax.jit(lambda v: v.round(decimals))(x), expected)


def test_clip_where_and_complex_comparisons():
    x = sample(F32)
    z = np.array([1 + 2j, 1 + 1j, 2 - 1j, 1 + 2j], np.complex64)
    w = np.array([1 + 1j, 1 + 2j, 1 + 9j, 1 + 2j], np.complex64)
    outs = plax.jit(lambda a, p, q: (jnp.clip(a, -1, 1), jnp.clip(a, max=0.5),
                                     jnp.where(a > 0, a, -1), jnp.where(a > 0, 1, 0),
                                     p < q, p <= q, p >= q, jnp.maximum(p, q)))(x, z, w)
    np.testing.assert_array_equal(outs[0], np.clip(x, -1, 1))
    np.testing.assert_array_equal(outs[1], np.minimum(x, 0.5))
    np.testing.assert_array_equal(outs[2], np.where(x > 0, x, -1))
    assert outs[3].dtype == I32 and outs[3].weak_type  # two Python ints
    np.testing.assert_array_equal(outs[4], z < w)
    np.testing.assert_array_equal(outs[5], z <= w)
    np.testing.assert_array_equal(outs[6], z >= w)
    np.testing.assert_array_equal(outs[7], np.maximum(z, w))
    with pytest.raises(ValueError, match="Complex values have no ordering"):
        jnp.clip(z, 0, 1)


# --- weak types and promotion (abstract: no compilation) ----------------------------------------

def out_aval(fn, *args):
    return plax.make_jaxpr(fn)(*args).out_avals[0]


@pytest.mark.parametrize("fn,args,dtype,weak", [
    (lambda x: x + 1.0, (np.ones(3, np.float16),), F16, False),
    (lambda x: x * 2, (np.ones(3, np.int8),), I8, False),
    (lambda x: x + 1, (np.ones(3, np.uint8),), U8, False),
    (lambda x: x / 2, (np.ones(3, np.int8),), F32, False),
    (lambda x: jnp.sqrt(x), (np.ones(3, np.int16),), F32, False),
    (lambda x, y: x + y, (1.0, 2), F32, True),
    (lambda x, y: x * y, (1, 2), I32, True),
    (lambda x, y: x < y, (1.0, 2.0), BOOL, True),
    (lambda x, y: x < y, (np.float32(1.0), 2.0), BOOL, False),
    (lambda x: x + 1.0, (np.ones(3, BF16),), BF16, False),
    (lambda x: jnp.ones(3, jnp.float16) + x, (1.0,), F16, False),
    (lambda x: x + 1j, (np.ones(3, np.float32),), C64, False),
    (lambda x: jnp.exp(x), (2.0,), F32, True),
])
def test_result_dtype_and_weak_type(fn, args, dtype, weak):
    aval = out_aval(fn, *args)
    assert (aval.dtype, aval.weak_type) == (dtype, weak)


def test_python_int_must_fit_the_default_int_then_wraps_like_jax():
    # As in JAX: the int is first an int32 (OverflowError if it does not fit, whatever
    # the other operand), then converted to the array's dtype, wrapping around.
    np.testing.assert_array_equal(jnp.ones(3, jnp.uint8) + 300, [45] * 3)
    np.testing.assert_array_equal(jnp.ones(2, jnp.int8) == 200, [False] * 2)
    np.testing.assert_array_equal(jnp.ones(2, jnp.uint8) + -1, [0, 0])
    for big in (2**31, 2**40, -2**63):
        for dtype in (jnp.uint32, jnp.float32):
            with pytest.raises(OverflowError, match="too large to convert to int32"):
                jnp.ones(2, dtype) + big
    with pytest.raises(OverflowError):
        2**40 == jnp.ones(2, jnp.float16)  # noqa: B015 - the comparison raises


# --- broadcasting and errors ---------------------------------------------------------------------

def test_broadcasting_follows_numpy_without_materializing_scalars():
    closed = plax.make_jaxpr(lambda x, y: x * y + 1.0)(np.ones((2, 1, 3), np.float32),
                                                       np.ones((4, 1), np.float32))
    assert closed.out_avals[0].shape == (2, 4, 3)
    # The lower-rank operand only gains a leading unit axis; lax broadcasts the rest.
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["broadcast_in_dim", "mul", "add"]


_dims = st.lists(st.integers(1, 3), max_size=3)


@given(_dims, _dims, st.data())
def test_broadcast_shapes_match_numpy(shape_x, shape_y, data):
    # Replace some sizes by 1 so that most pairs broadcast.
    shape_y = [1 if data.draw(st.booleans()) else d for d in shape_y]
    x, y = np.ones(shape_x, np.float32), np.ones(shape_y, np.int8)
    try:
        expected = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        # JAX's classes: a TypeError between operands of one rank (lax's shape rule), a
        # ValueError between ranks (NumPy's broadcasting).
        same_rank = len({len(s) for s in (shape_x, shape_y) if s}) < 2
        with pytest.raises(TypeError if same_rank else ValueError,
                           match="ncompatible shapes for broadcasting"):
            plax.make_jaxpr(jnp.subtract)(x, y)
        return
    aval = plax.make_jaxpr(jnp.subtract)(x, y).out_avals[0]
    assert (aval.shape, aval.dtype) == (expected, F32)


def test_incompatible_shapes_name_both_shapes():
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                        r"\(3,\), \(4,\)"):
        plax.make_jaxpr(jnp.add)(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: "
                                         r"shapes=\[\(2, 3\), \(4,\)\]"):
        jnp.add(jnp.ones((2, 3)), jnp.ones(4))


def test_rank_promotion_config_warns_or_raises():
    x, y = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    with numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            plax.make_jaxpr(jnp.add)(x, y)
        plax.make_jaxpr(jnp.add)(x, 1.0)  # scalars are always fine
    with numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="rank promotion for multiply"):
            plax.make_jaxpr(jnp.multiply)(x, y)


@pytest.mark.parametrize("call,error,match", [
    (lambda: jnp.add([1, 2], 1), TypeError, "add requires ndarray or scalar arguments"),
    (lambda: jnp.subtract(np.array([True]), np.array([False])), TypeError, "bool"),
    (lambda: jnp.negative(np.array([True])), TypeError, "bool"),
    (lambda: jnp.bitwise_and(np.ones(2, np.float32), 1), TypeError, "float32"),
    (lambda: jnp.where(np.ones(2, bool), 1), ValueError, "Either both or neither"),
    (lambda: jnp.matrix_transpose(np.ones(3, np.float32)), ValueError, "two-dimensional"),
    (lambda: jnp.floor_divide(np.ones(2, np.complex64), 1), TypeError, "complex"),
])
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plax.make_jaxpr(lambda: call())()


def test_angle_of_a_real_scalar_has_the_default_float_dtype_as_jax():
    # JAX's rule: real floating scalars (0-d) and integers give the default float;
    # real floating arrays keep their dtype.
    for scalar in (jnp.bfloat16(1), jnp.float16(-2), np.float16(3), jnp.int8(1)):
        assert jnp.angle(scalar).dtype == np.float32
    assert plax.jit(jnp.angle)(jnp.bfloat16(-1)).dtype == np.float32
    assert jnp.angle(jnp.ones(2, jnp.bfloat16)).dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(jnp.angle(jnp.float16(-2)), np.pi, rtol=1e-6)


def test_arctan2_of_complex_numbers_as_jax():
    y = np.array([1 + 1j, -2j], np.complex64)
    x = np.array([0.5, 2 - 1j], np.complex64)
    got = jnp.arctan2(y, x)
    assert got.dtype == np.complex64
    # arctan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)), the principal branches.
    want = -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(plax.grad(lambda v: jnp.arctan2(v, 1 + 0j).real)(0.5 + 0j),
                               1 / 1.25, rtol=1e-6)


def test_signbit_of_integers_is_not_weak_as_jax():
    for f in (jnp.signbit, plax.jit(jnp.signbit)):
        out = f(0)
        assert out.dtype == np.bool_ and not out.weak_type and not out
        assert bool(f(-3)) and not f(-3).weak_type


def test_power_by_a_concrete_integer_promotes_the_base_alone_as_jax():
    x = jnp.array([2, 3, 0], jnp.uint32)
    for exponent in (2**40, np.int64(2**40)):  # no int32 conversion of the exponent
        got = jnp.power(x, exponent)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, [pow(2, 2**40, 2**32), pow(3, 2**40, 2**32), 0])
    assert plax.jit(lambda v: v ** 2**40)(x).dtype == np.uint32
    assert jnp.power(jnp.array([2], jnp.int8), np.int64(3)).dtype == np.int8
    out = jnp.power(jnp.array([True]), 2)
    assert out.dtype == np.int32 and not out.weak_type
    assert jnp.power(jnp.arange(3, dtype=jnp.int8), jnp.int32(2)).dtype == np.int8


def test_trunc_of_python_floats():
    for value, want in ((-np.inf, -np.inf), (-2.5, -2.0), (2.5, 2.0)):
        out = jnp.trunc(value)
        assert out == want and out.dtype == np.float32 and out.weak_type


def test_round_refuses_booleans_as_jax_does():
    """Found by the fuzzer (JAX: ValueError 'not inexact'; NumPy refuses too)."""
    for decimals in (0, 1, -1):
        with pytest.raises(ValueError, match="not inexact"):
            jnp.round(jnp.array([True, False]), decimals)


def test_rint_of_integers_is_a_strong_default_float():
    # JAX converts integers and booleans (Python ones too) to the default float type,
    # not weakly typed; floats keep their type, weak or not (found by the fuzzer)
    for value in (-1, True, np.int8(3), jnp.arange(3)):
        out = jnp.rint(value)
        assert (out.dtype, out.weak_type) == (np.float32, False), value
        assert plax.jit(jnp.rint)(value).weak_type is False
        np.testing.assert_array_equal(out, np.rint(np.asarray(value)).astype(np.float32))
    assert jnp.rint(1.5).weak_type and float(jnp.rint(2.5)) == 2.0
    assert jnp.rint(jnp.float16(2.5)).dtype == np.float16


def test_gcd_and_lcm_end_where_abs_overflows():
    """|int32 min| is negative; Euclid's loop still ends (JAX's, which also orders each
    pair, never does) and gives NumPy's answers."""
    a = np.array([-2**31, 6, 0, -2**31, -12], np.int32)
    b = np.array([-3, 4, 0, 0, 18], np.int32)
    np.testing.assert_array_equal(jnp.gcd(a, b), np.gcd(a, b))
    np.testing.assert_array_equal(jnp.lcm(a[1:], b[1:]), np.lcm(a[1:], b[1:]))
    assert jnp.gcd(4, 6).weak_type and not jnp.gcd(a, 6).weak_type  # JAX's weak types


def test_angle_conversions_keep_a_python_scalars_weak_type():
    """As JAX's (its constant is `lax._const`): found by the differential fuzzer."""
    for f in (jnp.deg2rad, jnp.rad2deg, jnp.radians, jnp.degrees):
        assert f(1).weak_type and f(0.5).weak_type
        assert not f(np.float32(1)).weak_type


# --- jnp.ufunc objects: jnp.add.reduce, .accumulate, .at, .reduceat, .outer (vs JAX) --------

_UFUNC_METHODS = """
import inspect

def put(name, fn):  # the value (exactly), its weak type, or the class of the error
    try:
        value = fn()
    except Exception as err:
        results[name] = np.array(type(err).__name__)
    else:
        results[name] = np.asarray(value)
        results[name + ".weak"] = np.array(bool(getattr(value, "weak_type", False)))

i, u, f, b, s = (inputs[k] for k in ("i", "u", "f", "b", "s"))
pairs = (np.array([0, 0, 1]), np.array([1, 1, 2]))
for name in ("add", "multiply", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or",
             "bitwise_xor", "logical_and", "logical_or", "logical_xor", "logaddexp",
             "logaddexp2", "negative"):
    uf = getattr(jnp, name)
    x = f if name.startswith("logaddexp") else i
    put(f"{name}.call", lambda: uf(x, x[::-1]) if uf.nin == 2 else uf(x))
    put(f"{name}.reduce", lambda: uf.reduce(x))
    put(f"{name}.reduce_axis1", lambda: uf.reduce(x, axis=1, keepdims=True))
    put(f"{name}.reduce_none", lambda: uf.reduce(x, axis=None))
    put(f"{name}.reduce_tuple", lambda: uf.reduce(x, axis=(0, 1)))
    put(f"{name}.reduce_where", lambda: uf.reduce(x, axis=1, where=b, initial=x.dtype.type(3)))
    put(f"{name}.reduce_where_no_initial", lambda: uf.reduce(x, where=b))
    put(f"{name}.reduce_dtype", lambda: uf.reduce(x, dtype=np.float32))
    put(f"{name}.reduce_bools", lambda: uf.reduce(i > 0, axis=1))
    put(f"{name}.reduce_floats", lambda: uf.reduce(f, axis=1))
    put(f"{name}.reduce_empty", lambda: uf.reduce(f[:, :0], axis=1))
    put(f"{name}.accumulate", lambda: uf.accumulate(x, axis=1))
    put(f"{name}.accumulate_none", lambda: uf.accumulate(x, axis=None))
    put(f"{name}.accumulate_dtype", lambda: uf.accumulate(x, dtype=np.float32))
    put(f"{name}.at", lambda: uf.at(x, pairs, x[0, :3], inplace=False) if uf.nin == 2
        else uf.at(x, pairs, inplace=False))
    put(f"{name}.at_bools", lambda: uf.at(b, pairs, b[1, :3], inplace=False))
    put(f"{name}.at_scalar", lambda: uf.at(u, 2, 9, inplace=False))
    put(f"{name}.at_inplace", lambda: uf.at(x, 0, 1))
    put(f"{name}.reduceat", lambda: uf.reduceat(x, np.array([0, 2, 1, 3]), axis=1))
    put(f"{name}.reduceat_dtype", lambda: uf.reduceat(x, np.array([0, 2]), dtype=np.float32))
    put(f"{name}.outer", lambda: uf.outer(x[0], u[:2]))
    put(f"{name}.outer_scalars", lambda: uf.outer(2, 3))
    put(f"{name}.out", lambda: uf(x, x, out=x) if uf.nin == 2 else uf(x, where=True))

hypot = jnp.frompyfunc(lambda p, q: jnp.sqrt(p * p + q * q), 2, 1, identity=0)
diff = jnp.frompyfunc(lambda p, q: p - 2 * q, 2, 1)
halve = jnp.frompyfunc(lambda p: p / 2, 1, 1)
for name, uf in (("hypot", hypot), ("diff", diff)):
    put(f"{name}.call", lambda: uf(f, 1.5))
    put(f"{name}.reduce", lambda: uf.reduce(f, axis=1))
    put(f"{name}.reduce_ints", lambda: uf.reduce(i))
    put(f"{name}.reduce_where", lambda: uf.reduce(f, axis=1, where=b, initial=1.0))
    put(f"{name}.reduce_none", lambda: uf.reduce(s, axis=None, keepdims=True))
    put(f"{name}.reduce_tuple", lambda: uf.reduce(f, axis=(0, 1)))
    put(f"{name}.reduce_empty", lambda: uf.reduce(f[:, :0], axis=1))
    put(f"{name}.accumulate", lambda: uf.accumulate(f, axis=1))
    put(f"{name}.accumulate_empty", lambda: uf.accumulate(i[:0]))
    put(f"{name}.accumulate_none", lambda: uf.accumulate(f, axis=None))
    put(f"{name}.at", lambda: uf.at(f, pairs, 0.5, inplace=False))
    put(f"{name}.at_ints", lambda: uf.at(i, (0, 1), 2.5, inplace=False))
    put(f"{name}.reduceat", lambda: uf.reduceat(f, np.array([0, 3, 1]), axis=1))
    put(f"{name}.reduceat_0d", lambda: uf.reduceat(f[0, 0], np.array([0])))
    put(f"{name}.reduceat_2d_indices", lambda: uf.reduceat(f, np.array([[0]])))
    put(f"{name}.outer", lambda: uf.outer(f[0], s))
put("halve.at", lambda: halve.at(s, np.array([1, 1, 3]), inplace=False))
put("halve.reduce", lambda: halve.reduce(s))
put("halve.call", lambda: halve(i))
put("pair.call", lambda: jnp.frompyfunc(lambda p, q: (p, q), 2, 2)(s, 1)[1])
put("add.list", lambda: jnp.add.reduce([1, 2]))
put("add.axis_array", lambda: jnp.add.reduce(i, axis=jnp.array(0)))
put("add.where_ints", lambda: jnp.add.reduce(i, where=i))
put("add.jit_static", lambda: lib.jit(lambda fn, v: fn.reduce(v), static_argnums=0)(jnp.add, i))
put("add.vmap_reduce", lambda: lib.vmap(jnp.add.reduce)(i))
put("logaddexp.grad", lambda: lib.grad(lambda v: jnp.logaddexp.reduce(v))(f[0]))
put("add.jaxpr", lambda: np.array(str(lib.make_jaxpr(jnp.add.reduce)(i))))
put("reductions.jaxpr", lambda: np.array(str(lib.make_jaxpr(
    lambda v: jnp.multiply.accumulate(v, axis=1) + jnp.bitwise_or.reduce(v)
    + jnp.logical_xor.reduce(v, axis=0, where=b, keepdims=True)
    + jnp.logaddexp.reduce(v, axis=1, keepdims=True).astype(int))(i))))
put("negative.jaxpr", lambda: np.array(str(lib.make_jaxpr(lib.jit(jnp.negative))(f))))
put("signatures", lambda: np.array([f"{p.name} {p.kind} {p.default}" for m in (
    "reduce", "accumulate", "at", "reduceat", "outer")
    for p in inspect.signature(getattr(jnp.add, m)).parameters.values()]))
"""


def _ufunc_inputs():
    rng = np.random.default_rng(1)
    return {"i": rng.integers(-4, 9, (3, 4)).astype(np.int32),
            "u": np.array([3, 200, 7, 0], np.uint8),
            "f": rng.normal(size=(3, 4)).astype(np.float32) * 3,
            "b": np.array([True, False, True, True]),
            "s": np.array([1.5, -0.5, 4.0, 2.25], np.float16)}


@requires_jax
def test_ufunc_methods_are_jaxs():
    """Every method of JAX's ufunc objects, with JAX's dedicated reductions, scans and
    scatters and its loops for the others: the same bits, weak types and error classes
    (and, for reductions, the same Jaxprs)."""
    assert_same_bits_as_jax(_UFUNC_METHODS, _ufunc_inputs())


_UFUNC_OBJECTS = """
import inspect
params = lambda f: [(p.name, p.kind.name) for p in inspect.signature(f).parameters.values()]
ufuncs = {n: getattr(jnp, n) for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)}
result = {n: [f.__name__, repr(f), f.nin, f.nout, f.nargs, repr(f.identity), params(f)]
          for n, f in ufuncs.items()}
result["ufunc"] = params(jnp.ufunc)
"""


@requires_jax
def test_the_ufunc_objects_are_jaxs():
    """The same functions of jnp are ufuncs, with JAX's names, reprs, nin, nout, nargs,
    identities and call signatures."""
    assert run_reference(_UFUNC_OBJECTS, "plax") == run_reference(_UFUNC_OBJECTS)


_EAGER_COMPILES = """
import logging
x, y = jnp.asarray(np.arange(4, dtype=np.float32)), jnp.asarray(np.ones(4, np.float32))
idx = jnp.asarray(np.array([0, 0], np.int32))
cases = {"vmap(add)": lambda: jax.vmap(jnp.add)(x, y),
         "jvp(multiply)": lambda: jax.jvp(jnp.multiply, (x, y), (y, y))[1],
         "add": lambda: jnp.add(x, y), "add.reduce": lambda: jnp.add.reduce(x),
         "multiply.outer": lambda: jnp.multiply.outer(x, y),
         "add.accumulate": lambda: jnp.add.accumulate(x),
         "add.at": lambda: jnp.add.at(x, idx, 1.0, inplace=False),
         "x + y": lambda: x + y, "2 * x": lambda: 2 * x, "x / y": lambda: x / y, "-x": lambda: -x,
         "x & x": lambda: idx & idx, "vmap(operators)": lambda: jax.vmap(lambda a: a * a - 1)(x)}
compiled = []
class Names(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("Compiling "):
            compiled.append(record.getMessage().split()[1])
logging.getLogger().addHandler(Names())
result = {"type": type(jnp.add._func).__name__}
with jax.log_compiles(True):
    for name, case in cases.items():
        compiled.clear()
        out = np.asarray(case())
        result[name] = [list(compiled), str(out.dtype), out.tolist()]
"""


@requires_jax
def test_ufuncs_and_operators_compile_as_jaxs_jit_inline_functions():
    """jnp's ufuncs and the array operators are `jit(inline=True)` functions, as JAX's:
    eager calls, also under vmap and jvp, compile the same computations with the same
    names as JAX's, with the same results."""
    assert run_reference(_EAGER_COMPILES, "plax") == run_reference(_EAGER_COMPILES)


def test_ufuncs_are_static_hashable_immutable_and_pickle_by_name():
    assert jnp.add == jnp.ufunc(jnp.add._func, 2, 1, name="add", identity=0)
    assert hash(jnp.add) == hash(jnp.ufunc(jnp.add._func, 2, 1, name="add", identity=0))
    assert jnp.add != jnp.subtract and len({jnp.add, jnp.add, jnp.multiply}) == 2
    with pytest.raises(AttributeError):
        jnp.add.nin = 3
    for uf in (jnp.add, jnp.logaddexp2, jnp.negative):
        assert pickle.loads(pickle.dumps(uf)) is uf
    made = pickle.loads(pickle.dumps(jnp.frompyfunc(operator.sub, 2, 1, identity=0)))
    assert made == jnp.frompyfunc(operator.sub, 2, 1, identity=0)
    np.testing.assert_array_equal(made.accumulate(np.arange(4)), [0, -1, -3, -6])
    assert jnp.add.__doc__ and inspect.signature(jnp.add).parameters.keys() == {
        "args", "out", "where"}
    calls = jnp.ufunc(lambda a, b: a + b, 2, 1, call=lambda a, b: a * b,
                      reduce=lambda a, **kw: a[:1])
    assert int(calls(3, 4)) == 12 and calls.reduce(np.ones(2)).shape == (1,)
    with pytest.raises(TypeError):
        jnp.ufunc(operator.add, 1.5, 1)


def test_ufunc_errors_are_shown_from_the_callers_line():
    with pytest.raises(ValueError) as info:
        jnp.maximum.reduce(np.ones(3), where=np.ones(3, bool))  # no identity, no initial
    assert info.value.__traceback__.tb_frame.f_code.co_filename == __file__
