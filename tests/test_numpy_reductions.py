"""plax.numpy reductions against NumPy: axis/keepdims/where/initial variants, JAX's
result dtypes, and errors. One jitted function per input dtype."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import plax
import plax.numpy as jnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I32, U8, U32, BOOL = (np.dtype(t) for t in (np.int8, np.int32, np.uint8, np.uint32, bool))

MASK = np.array([[True, False, True, True], [False, False, True, False],
                 [True, True, True, False]])


def sample(dtype) -> np.ndarray:
    base = np.array([[3, -1, 2, 0], [1, 4, -2, 5], [-3, 2, 1, 1]])
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return base > 0
    if dtype.kind == "u":
        return np.abs(base).astype(dtype)
    if dtype.kind == "c":
        return (base + 0.5j * base[::-1]).astype(dtype)
    return (base * (0.5 if dtype.kind == "f" or dtype == BF16 else 1)).astype(dtype)


def summed_dtype(dtype):
    """JAX: bool and narrow integers sum as the default int (uint for unsigned)."""
    return {BOOL: I32, I8: I32, U8: U32}.get(np.dtype(dtype), np.dtype(dtype))


def accumulated_dtype(dtype):
    """JAX: cumulative sums and products keep integer dtypes; bools accumulate as int32."""
    return I32 if np.dtype(dtype) == BOOL else np.dtype(dtype)


def inexact(dtype):
    return F32 if np.dtype(dtype).kind in "biu" else np.dtype(dtype)


def real_of(dtype):
    return F32 if np.dtype(dtype) == C64 else inexact(dtype)


def _cases(dtype):
    """name → (plax function, NumPy reference, result dtype)."""
    s, inex, acc = summed_dtype(dtype), inexact(dtype), accumulated_dtype(dtype)
    cases = {
        "sum": (lambda x: jnp.sum(x), lambda x: np.sum(x), s),
        "sum0": (lambda x: jnp.sum(x, axis=0), lambda x: np.sum(x, 0), s),
        "sum_keep": (lambda x: jnp.sum(x, axis=-1, keepdims=True),
                     lambda x: np.sum(x, -1, keepdims=True), s),
        "sum_where": (lambda x: jnp.sum(x, axis=1, where=MASK),
                      lambda x: np.sum(x, 1, where=MASK), s),
        "sum_initial": (lambda x: jnp.sum(x, axis=(0, 1), initial=2),
                        lambda x: np.sum(x, (0, 1), initial=2), s),
        "prod": (lambda x: jnp.prod(x, axis=1), lambda x: np.prod(x, 1), s),
        "mean": (lambda x: jnp.mean(x, axis=0), lambda x: np.mean(x, 0), inex),
        "mean_where": (lambda x: jnp.mean(x, axis=1, where=MASK, keepdims=True),
                       lambda x: np.mean(x, 1, where=MASK, keepdims=True), inex),
        "var": (lambda x: jnp.var(x, axis=1), lambda x: np.var(x, 1), real_of(dtype)),
        "std_ddof": (lambda x: jnp.std(x, ddof=1), lambda x: np.std(x, ddof=1), real_of(dtype)),
        "var_where": (lambda x: jnp.var(x, axis=0, where=MASK),
                      lambda x: np.var(x, 0, where=MASK), real_of(dtype)),
        "cumsum": (lambda x: jnp.cumsum(x, axis=1), lambda x: np.cumsum(x, 1, acc), acc),
        "cumsum_flat": (lambda x: jnp.cumsum(x), lambda x: np.cumsum(x, dtype=acc), acc),
        "cumprod": (lambda x: jnp.cumprod(x, axis=0), lambda x: np.cumprod(x, 0, acc), acc),
        # JAX's all/any read a complex number's real part (NumPy's the whole number)
        "all": (lambda x: jnp.all(x, axis=0), lambda x: np.all(np.real(x), 0), BOOL),
        "any_keep": (lambda x: jnp.any(x, keepdims=True),
                     lambda x: np.any(np.real(x), keepdims=True), BOOL),
        "count_nonzero": (lambda x: jnp.count_nonzero(x, axis=1),
                          lambda x: np.count_nonzero(x, 1), I32),
    }
    if np.dtype(dtype).kind != "c":
        cases.update({
            "max": (lambda x: jnp.max(x, axis=1), lambda x: np.max(x, 1), dtype),
            "min_keep": (lambda x: jnp.min(x, axis=(0, 1), keepdims=True),
                         lambda x: np.min(x, (0, 1), keepdims=True), dtype),
            "max_where": (lambda x: jnp.max(x, axis=0, where=MASK, initial=0),
                          lambda x: np.max(x, 0, where=MASK, initial=0), dtype),
            "argmax": (lambda x: jnp.argmax(x, axis=1), lambda x: np.argmax(x, 1), I32),
            "argmin_flat": (lambda x: jnp.argmin(x), lambda x: np.argmin(x), I32),
            "argmax_keep": (lambda x: jnp.argmax(x, axis=0, keepdims=True),
                            lambda x: np.argmax(x, 0, keepdims=True), I32),
        })
    return cases


@pytest.mark.parametrize("dtype", [BOOL, I8, I32, U8, F16, BF16, F32, C64], ids=str)
def test_reductions_match_numpy(dtype):
    cases = _cases(dtype)
    x = sample(dtype)
    outs = plax.jit(lambda v: {k: fn(v) for k, (fn, _, _) in cases.items()})(x)
    ref_x = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) \
        if x.dtype.kind in "fc" or x.dtype == BF16 else x
    tol = {F16: 4e-3, BF16: 3e-2}.get(dtype, 1e-5)
    for name, (_, ref, out_dtype) in cases.items():
        actual, expected = np.asarray(outs[name]), np.asarray(ref(ref_x))
        assert actual.dtype == out_dtype, f"{name}: {actual.dtype} != {out_dtype}"
        assert actual.shape == expected.shape, name
        if out_dtype.kind in "biu":
            np.testing.assert_array_equal(actual, expected.astype(out_dtype), err_msg=name)
        else:
            wide = np.complex128 if out_dtype.kind == "c" else np.float64
            np.testing.assert_allclose(actual.astype(wide), expected, rtol=tol, atol=tol,
                                       err_msg=name)


def test_methods_and_float16_sums_accumulate_in_float32():
    x = np.full(4096, 0.1, np.float16)
    closed = plax.make_jaxpr(lambda v: v.sum())(x)
    assert closed.out_avals[0].dtype == F16
    assert "f32" in str(closed)  # accumulated in float32, then converted back
    total = plax.jit(lambda v: v.sum())(x)
    assert abs(float(total) - 4096 * float(np.float16(0.1))) < 1.0


def test_reductions_of_weak_operands_are_strongly_typed_as_in_jax():
    for reduce in (jnp.sum, jnp.max, jnp.all, jnp.mean):
        assert not plax.make_jaxpr(reduce)(2.0).out_avals[0].weak_type
    aval = plax.make_jaxpr(lambda: jnp.sum(jnp.array(2.0)))().out_avals[0]
    assert not aval.weak_type
    aval = plax.make_jaxpr(lambda: jnp.sum(jnp.array(2.0), dtype=jnp.float32))().out_avals[0]
    assert not aval.weak_type


@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4),
       data=st.data())
def test_reduction_shapes_for_any_axes(shape, data):
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a:
                              a % len(shape), max_size=len(shape)))
    keepdims = data.draw(st.booleans())
    expected = np.sum(np.ones(shape), axis=tuple(axes), keepdims=keepdims).shape
    aval = plax.make_jaxpr(lambda x: jnp.sum(x, axis=tuple(axes), keepdims=keepdims))(
        np.ones(shape, np.float32)).out_avals[0]
    assert aval.shape == expected


@pytest.mark.parametrize("call,error,match", [
    (lambda x: jnp.sum(x, axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda x: jnp.sum(x, axis=(0, 0)), ValueError, "duplicate"),
    (lambda x: jnp.max(x, where=x > 0), ValueError, "initial"),
    (lambda x: jnp.max(x[:0]), ValueError, "zero-size array"),
    (lambda x: jnp.argmax(x[:0]), ValueError, "empty sequence"),
    (lambda x: jnp.var(x, ddof=1, correction=1), ValueError, "simultaneously"),
    (lambda x: jnp.sum(x, out=x), NotImplementedError, "out"),
])
def test_reduction_errors(call, error, match):
    with pytest.raises(error, match=match):
        plax.make_jaxpr(call)(np.ones((2, 3), np.float32))


def test_mean_with_dtype_bool_is_a_type_error_as_jax():
    with pytest.raises(TypeError, match="bool"):
        jnp.mean(jnp.ones(2, jnp.bfloat16), dtype=bool)
    with pytest.raises(TypeError, match="bool"):
        plax.jit(lambda x: jnp.mean(x, axis=0, dtype=jnp.bool_))(jnp.ones((2, 2)))
    assert jnp.mean(jnp.ones(2), dtype=jnp.int32).dtype == np.int32
