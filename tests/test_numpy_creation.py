"""Array creation, dtype objects and constants in plax.numpy, against NumPy."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import plax
import plax.numpy as jnp

BF16 = np.dtype(ml_dtypes.bfloat16)


def avals(fn, *args):
    return plax.make_jaxpr(fn)(*args).out_avals


def test_array_from_python_and_numpy_values():
    cases = [
        (jnp.array([1, 2, 3]), np.int32, False),
        (jnp.array([1, 2.5]), np.float32, False),
        (jnp.array([[True], [False]]), bool, False),
        (jnp.array(np.arange(3.0)), np.float32, False),  # float64 canonicalized
        (jnp.array(1.5), np.float32, True),  # a Python scalar stays weakly typed
        (jnp.asarray(7), np.int32, True),
        (jnp.array([1, 2], dtype=jnp.float16), np.float16, False),
        (jnp.asarray(np.float16(2)), np.float16, False),
        (jnp.array(2.0, dtype=BF16), BF16, False),
    ]
    for arr, dtype, weak in cases:
        assert isinstance(arr, plax.Array)
        assert (arr.dtype, arr.weak_type) == (np.dtype(dtype), weak), arr
    np.testing.assert_array_equal(jnp.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]])
    assert jnp.array([1, 2], ndmin=3).shape == (1, 1, 2)
    assert jnp.array([]).shape == (0,) and jnp.array([]).dtype == np.float32


def test_array_of_a_list_holding_traced_values_stacks_them():
    def f(x, y):
        return jnp.array([[x, y], [y, 1.0]]), jnp.array([x, 2], dtype=jnp.int32)
    stacked, ints = avals(f, np.float32(1), np.float32(2))
    assert (stacked.shape, stacked.dtype, stacked.weak_type) == ((2, 2), np.float32, False)
    assert (ints.shape, ints.dtype) == ((2,), np.int32)
    out = plax.jit(f)(np.float32(1), np.float32(2))[0]
    np.testing.assert_array_equal(out, [[1, 2], [2, 1]])


def test_asarray_keeps_arrays_and_array_copies_them():
    x = jnp.arange(3)
    assert jnp.asarray(x) is x
    y = jnp.array(x)
    assert y is not x
    np.testing.assert_array_equal(y, x)
    assert jnp.asarray(x, jnp.float32).dtype == np.float32
    assert jnp.astype(x, jnp.bool_).dtype == np.bool_


def test_filled_arrays():
    outs = plax.jit(lambda a: (jnp.zeros((2, 3)), jnp.ones(2, jnp.int8), jnp.full((2,), 7),
                               jnp.full((2, 3), np.array([1, 2, 3], np.int16)), jnp.empty(2),
                               jnp.zeros_like(a), jnp.ones_like(a, dtype=bool),
                               jnp.full_like(a, 2.5), jnp.full_like(a, 1, shape=(4,)),
                               jnp.empty_like(a)))(np.ones((2, 2), np.int32))
    expected = [np.zeros((2, 3), np.float32), np.ones(2, np.int8), np.full(2, 7, np.int32),
                np.full((2, 3), [1, 2, 3], np.int16), np.zeros(2, np.float32),
                np.zeros((2, 2), np.int32), np.ones((2, 2), bool),
                np.full((2, 2), 2, np.int32), np.ones(4, np.int32), np.zeros((2, 2), np.int32)]
    for out, exp in zip(outs, expected):
        assert out.dtype == exp.dtype and out.shape == exp.shape
        np.testing.assert_array_equal(out, exp)
    weak, strong = avals(lambda: (jnp.full(3, 1.0), jnp.full(3, 1.0, jnp.float32)))
    assert weak.weak_type and not strong.weak_type


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((2, 10, 3), {}), ((0.0, 1.0, 0.25), {}), ((5, 0, -2), {}), ((3.5,), {}),
    ((-2,), {}), ((1, 4), {"dtype": np.float16}), ((10, 2), {}),
])
def test_arange_matches_numpy(args, kwargs):
    out = jnp.arange(*args, **kwargs)
    expected = np.arange(*args, **kwargs)
    expected_dtype = {np.dtype(np.int64): np.int32, np.dtype(np.float64): np.float32}.get(
        expected.dtype, expected.dtype)
    assert out.dtype == expected_dtype
    np.testing.assert_allclose(out, expected)


def test_arange_with_a_traced_bound_is_a_concretization_error():
    with pytest.raises(plax.ConcretizationTypeError, match="arange argument 'stop'"):
        plax.make_jaxpr(lambda n: jnp.arange(0, n))(3)


@pytest.mark.parametrize("kwargs", [
    dict(start=0, stop=1, num=5), dict(start=-2.0, stop=3.0, num=7, endpoint=False),
    dict(start=1, stop=10, num=4, dtype=np.int32), dict(start=0, stop=1, num=1),
    dict(start=0, stop=1, num=0), dict(start=np.array([0.0, 1.0]), stop=2.0, num=3, axis=1),
    dict(start=np.array([0.0, 1.0]), stop=np.array([2.0, -1.0]), num=4, axis=-1),
])
def test_linspace_matches_numpy(kwargs):
    np.testing.assert_allclose(jnp.linspace(**kwargs), np.linspace(**kwargs), rtol=1e-6,
                               atol=1e-6)
    out, step = jnp.linspace(0.0, 2.0, 5, retstep=True)
    assert float(step) == 0.5 and out.shape == (5,)


def test_linspace_endpoint_is_exact_and_traced_bounds_work():
    out = plax.jit(lambda a, b: jnp.linspace(a, b, 7))(np.float32(0.1), np.float32(0.7))
    assert out[-1] == np.float32(0.7)
    np.testing.assert_allclose(out, np.linspace(0.1, 0.7, 7), rtol=1e-6)


def test_eye_and_identity():
    outs = plax.jit(lambda k: (jnp.eye(3), jnp.eye(2, 4, k=1), jnp.eye(3, k=-2, dtype=int),
                               jnp.eye(3, k=k), jnp.identity(2, jnp.int8)))(np.int32(1))
    expected = [np.eye(3), np.eye(2, 4, k=1), np.eye(3, k=-2, dtype=np.int32), np.eye(3, k=1),
                np.identity(2, np.int8)]
    for out, exp in zip(outs, expected):
        np.testing.assert_array_equal(out, exp)
    assert outs[2].dtype == np.int32 and outs[4].dtype == np.int8


def test_scalar_types_are_dtypes_and_make_arrays():
    x = jnp.float32(3)
    assert isinstance(x, plax.Array) and x.dtype == np.float32 and x.shape == ()
    assert not x.weak_type
    assert jnp.int8([1, 2]).dtype == np.int8
    assert jnp.float32 == np.float32 and np.dtype(jnp.bfloat16) == BF16
    assert jnp.zeros(2, jnp.uint8).dtype == np.uint8
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating)
    assert isinstance(np.float32(1), jnp.float32)
    assert jnp.bool is jnp.bool_ and jnp.dtype("int8") == np.int8
    with pytest.warns(UserWarning, match="float64"):
        assert jnp.float64(1).dtype == np.float32  # x64 is off


def test_dtype_functions_and_constants():
    assert jnp.promote_types(jnp.int8, jnp.uint8) == np.int16
    assert jnp.promote_types(jnp.bfloat16, jnp.float16) == np.float32
    assert jnp.result_type(np.ones(2, np.float16), 1.0) == np.float16
    assert jnp.iinfo(jnp.int8).max == 127 and jnp.finfo(jnp.bfloat16).bits == 16
    assert jnp.pi == np.pi and jnp.e == np.e and jnp.isnan(jnp.nan) and jnp.inf == np.inf
    assert jnp.newaxis is None
    assert jnp.ndarray is plax.Array


@pytest.mark.parametrize("call,error,match", [
    (lambda: jnp.zeros(3, dtype="foo"), TypeError, "foo"),
    (lambda: jnp.zeros(3, dtype=np.str_), TypeError, "dtype"),
    (lambda: jnp.array("text"), TypeError, "dtype"),
    (lambda: jnp.zeros((2, -1)), ValueError, "negative"),
    (lambda: jnp.zeros((2.5,)), TypeError, "concrete values of integer type"),
    (lambda: jnp.linspace(0, 1, -1), ValueError, "non-negative"),
    (lambda: jnp.array([1], order="F"), NotImplementedError, "order"),
    (lambda: jnp.eye(2, k=0.5), TypeError, "integer"),
])
def test_creation_errors(call, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=match):
            call()


def test_arange_of_booleans_is_a_type_error_as_in_jax():
    # NumPy answers for up to two values; JAX's iota refuses bool (found by the fuzzer)
    for args, kwargs in (((0.0, 5, 10), {"dtype": bool}), ((2,), {"dtype": bool}),
                         ((True,), {})):
        with pytest.raises(TypeError, match="arange does not accept dtype bool"):
            jnp.arange(*args, **kwargs)


def test_arange_and_iota_of_a_complex_dtype_count_as_in_jax():
    """JAX's iota takes complex dtypes (scipy.linalg.dft builds on it)."""
    np.testing.assert_array_equal(jnp.arange(3, dtype=jnp.complex64),
                                  np.array([0, 1, 2], np.complex64))
    assert jnp.arange(3, dtype=jnp.complex64).dtype == np.complex64
    np.testing.assert_array_equal(plax.lax.broadcasted_iota(np.complex64, (2, 2), 1),
                                  np.array([[0, 1], [0, 1]], np.complex64))


@pytest.mark.parametrize("args", [(-3, 2.5, 0), (5, 0, 0.0), (0, 3, 0)])
def test_arange_with_a_zero_step_is_a_zero_division_error_as_numpy(args):
    with pytest.raises(ZeroDivisionError, match="step must not be zero"):
        jnp.arange(*args)


def test_a_python_complex_fill_of_a_real_dtype_is_a_type_error_as_in_jax():
    """Found by the fuzzer: the imaginary part used to be dropped silently."""
    import ml_dtypes
    for dtype in (np.float32, np.int32, ml_dtypes.float8_e4m3fn):
        with pytest.raises(TypeError, match="Python complex 1j cannot fill"):
            jnp.full((2,), 1j, dtype=dtype)
    with pytest.raises(TypeError, match="full_like"):
        jnp.full_like(jnp.ones(2), 1j)
    assert jnp.full((2,), 1j).dtype == np.complex64


def test_like_functions_take_any_shaped_object():
    """As JAX: `zeros_like`/`full_like` of a ShapeDtypeStruct (optax builds its
    optimizer states this way); an object without shape and dtype stays a TypeError."""
    import plax
    sds = plax.ShapeDtypeStruct((2, 3), np.int32)
    z = jnp.zeros_like(sds)
    assert z.shape == (2, 3) and z.dtype == np.int32 and not np.asarray(z).any()
    f = plax.jit(lambda: jnp.full_like(sds, 7, dtype=np.float32))()
    np.testing.assert_array_equal(f, np.full((2, 3), 7, np.float32))
    with pytest.raises(TypeError, match="zeros_like requires ndarray or scalar"):
        jnp.zeros_like(object())


def test_copy_method_and_round_builtin():
    import plax
    x = jnp.array([0.4, 1.6, 2.5], np.float32)
    for y in (x.copy(), plax.jit(lambda v: v.copy())(x)):
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y, np.asarray(x))
    # round(x) without ndigits is an integer (as Python's round of a float and JAX's)
    for r in (round(x), plax.jit(round)(x)):
        assert r.dtype == np.int32
        np.testing.assert_array_equal(r, np.round(np.asarray(x)).astype(np.int32))
    r = round(jnp.float32(2.66), 1)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, 2.7, rtol=1e-6)


class _StandsForArray:
    """An object with JAX's `__jax_array__` protocol (flax's nnx Variables have it)."""

    def __init__(self, value):
        self.value = value

    def __jax_array__(self):
        return self.value


def test_objects_with_jax_array_act_as_their_array():
    x = jnp.arange(3.0)
    v = _StandsForArray(x)
    expected = np.arange(3.0, dtype=np.float32)
    np.testing.assert_array_equal(jnp.asarray(v), expected)
    np.testing.assert_array_equal(x + v, 2 * expected)
    np.testing.assert_allclose(jnp.sin(v), np.sin(expected), rtol=1e-6)
    np.testing.assert_array_equal(plax.device_put(v), expected)
    f = plax.jit(lambda a: a * 2)
    for i in range(2):  # the second call takes the cached path
        np.testing.assert_array_equal(f(_StandsForArray(x + i)), 2 * (expected + i))
    host = _StandsForArray(np.ones((2, 2), np.int32))
    assert plax.jit(lambda a: a.sum())(host) == 4
    with pytest.raises(TypeError, match="as an abstract array"):
        plax.jit(lambda a: a)(object())
