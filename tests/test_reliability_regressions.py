"""Each example of the reliability report, as JAX 0.10.2 behaves: results that used to
be silently wrong, exception classes that broke `except` clauses, internal errors,
process aborts, tracer messages, and eager autodiff of custom rules."""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax

# --- silent wrong answers -------------------------------------------------------------------


@pytest.mark.parametrize("make,value", [(jnp.int8, 200), (jnp.uint8, -1), (jnp.int32, 2**31),
                                        (jnp.int16, -2**15 - 1)])
def test_scalar_types_reject_python_ints_out_of_range(make, value):
    with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds"):
        make(value)
    with pytest.raises(OverflowError):
        jnp.array([1, value], dtype=make)
    # NumPy values convert as NumPy converts them (wrapping), as in JAX.
    assert int(jnp.int8(np.int64(200))) == -56


def test_integer_division_by_zero_follows_jax_and_remainder_numpy():
    """By zero, the quotient is JAX's (XLA's -1 less JAX's floor correction where the
    dividend is nonzero; all ones unsigned: test_bits_vs_jax holds the bits), the
    remainder NumPy's 0 (XLA's is the dividend)."""
    x, y = np.array([5, -7, 3, 0], np.int32), np.array([0, 2, -2, 0], np.int32)
    with np.errstate(divide="ignore"):
        want_q, want_r = np.where(y == 0, np.where(x == 0, -1, -2), x // y), x % y
    for f in (lambda a, b: (a // b, a % b), jnp.divmod,
              plax.jit(lambda a, b: (jnp.floor_divide(a, b), jnp.remainder(a, b)))):
        q, r = f(jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_array_equal(q, want_q)
        np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(jnp.asarray(x) % 0, [0] * 4)
    np.testing.assert_array_equal(jnp.fmod(jnp.asarray(x), 0), [0] * 4)
    np.testing.assert_array_equal(jnp.asarray(x, jnp.uint8) // 0, [255] * 4)


def test_cumulative_sums_keep_integer_dtypes():
    for dtype in (jnp.int8, jnp.uint8, jnp.int16):
        assert jnp.cumsum(jnp.ones(3, dtype)).dtype == dtype
        assert jnp.cumprod(jnp.ones(3, dtype)).dtype == dtype
    assert jnp.cumsum(jnp.ones(3, bool)).dtype == jnp.int32
    np.testing.assert_array_equal(jnp.cumsum(jnp.full(3, 100, jnp.int8)), [100, -56, 44])


def test_linspace_step_has_the_computation_dtype():
    out, step = jnp.linspace(0, 10, 5, retstep=True, dtype=jnp.int32)
    assert out.dtype == jnp.int32 and step.dtype == jnp.float32 and float(step) == 2.5
    out, step = jnp.linspace(jnp.float16(0), 1, 3, retstep=True)
    assert out.dtype == step.dtype == jnp.float16


def test_complex_data_to_a_real_dtype_raises():
    with pytest.raises(TypeError, match="complex"):
        jnp.array([1, 2.5j], dtype=jnp.float32)
    with pytest.raises(TypeError):
        jnp.float32(1 + 2j)


def test_python_ints_must_fit_the_default_integer():
    with pytest.raises(OverflowError, match="too large to convert to int32"):
        2**40 == jnp.ones(2, jnp.float16)  # noqa: B015 - the comparison itself raises
    with pytest.raises(OverflowError):
        plax.jit(lambda x: x + 2**40)(jnp.ones(2))
    np.testing.assert_array_equal(jnp.ones(2, jnp.int8) + 300, [45, 45])  # wraps, as in JAX


# --- exception classes ------------------------------------------------------------------


def test_broadcasting_mismatch_is_a_type_error_between_operands_of_one_rank():
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                        r"\(3,\), \(4,\)"):
        jnp.ones(3) + jnp.ones(4)
    with pytest.raises(TypeError):
        plax.jit(jnp.multiply)(jnp.ones((2, 3)), jnp.ones((3, 3)))
    with pytest.raises(ValueError):  # between ranks: NumPy's ValueError, as in JAX
        jnp.ones((2, 3)) + jnp.ones(4)


def test_lax_in_dim_axes_out_of_range_are_index_errors_and_value_errors():
    x = jnp.ones((2, 3))
    for call in (lambda: lax.slice_in_dim(x, 0, 1, axis=5),
                 lambda: lax.index_in_dim(x, 0, axis=-5),
                 lambda: lax.dynamic_slice_in_dim(x, 0, 1, axis=5),
                 lambda: lax.dynamic_update_index_in_dim(x, jnp.ones(3), 0, axis=5)):
        with pytest.raises(IndexError, match="out of bounds"):
            call()
        with pytest.raises(ValueError):  # NumPy's AxisError is both
            call()


def test_lax_shape_rule_errors_are_type_errors_as_in_jax():
    x = jnp.ones((2, 3))
    for call in (lambda: lax.rev(x, (5,)), lambda: lax.transpose(x, (0, 0)),
                 lambda: lax.concatenate([x, x], 5), lambda: lax.slice(x, (0, 0), (3, 3)),
                 lambda: lax.dot_general(x, x, (((5,), (0,)), ((), ()))),
                 lambda: lax.broadcast_in_dim(jnp.ones(3), (2, 3), (5,))):
        with pytest.raises(TypeError):
            call()


def test_static_out_of_bounds_indices_clamp_on_reads_and_drop_on_updates():
    q = jnp.arange(5.0)
    t = 5
    assert float(q[t + 1]) == 4.0  # reading past the end gives the last element
    assert float(plax.jit(lambda a: a[t + 1])(q)) == 4.0
    assert float(q[-9]) == 0.0
    m = jnp.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(m[5, 1], 4)
    np.testing.assert_array_equal(m[:, 7], [2, 5])
    np.testing.assert_array_equal(m[7, jnp.array([0, 1])], [3, 4])
    np.testing.assert_array_equal(q.at[7].set(9.0), q)  # updates out of bounds: dropped
    np.testing.assert_array_equal(m.at[1, 7].mul(9), m)
    np.testing.assert_array_equal(q.at[7].set(9.0, mode="clip"), [0, 1, 2, 3, 9])
    assert float(q.at[7].get(mode="fill", fill_value=-1.0)) == -1.0
    with pytest.raises(IndexError, match="size 0"):
        jnp.zeros(0)[0]


# --- internal errors and aborts ----------------------------------------------------------


def test_flatnonzero_of_an_empty_array_gives_the_fill_values():
    np.testing.assert_array_equal(jnp.flatnonzero(jnp.zeros((3, 0)), size=3), [0, 0, 0])


def test_a_float_fill_value_promotes_nonzero_indices_as_jax():
    out = jnp.flatnonzero(np.array([0, 3], np.int8), size=2, fill_value=2.5)
    assert out.dtype == np.float32 and out.weak_type
    np.testing.assert_array_equal(out, [1.0, 2.5])
    assert jnp.nonzero(np.eye(2), size=3)[0].dtype == np.int32
    assert [i.tolist() for i in jnp.nonzero(jnp.zeros((3, 0)), size=2, fill_value=-1)] == \
        [[-1, -1], [-1, -1]]


def test_jit_of_linearize_with_an_integer_output_returns_float0_zeros():
    out = plax.jit(lambda a, b: plax.linearize(lambda x: jnp.sum(x) > 0, a)[1](b))(
        jnp.ones(3), jnp.ones(3))
    assert isinstance(out, np.ndarray) and out.dtype == plax.extend.dtypes.float0
    assert out.shape == ()


@pytest.mark.parametrize("shape", [(2**62,), (2**31, 2**31), (2**61, 0, 2**62)])
def test_absurd_shapes_raise_instead_of_aborting(shape):
    with pytest.raises(ValueError, match="too large"):
        jnp.zeros(shape)
    with pytest.raises(plax.errors.InvalidShapeError):
        plax.jit(lambda: jnp.ones(shape))()


def test_negative_dimensions_are_both_value_and_type_errors():
    for call in (lambda: jnp.zeros((-1,)), lambda: lax.full((2, -3), 0.0),
                 lambda: jnp.broadcast_to(jnp.ones(3), (-1, 3))):
        with pytest.raises(ValueError, match="negative"):
            call()
        with pytest.raises(TypeError):
            call()


def test_allocation_failures_are_resource_exhausted_errors():
    with pytest.raises(plax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
        jnp.zeros((2**45,), jnp.int8).block_until_ready()


# --- tracer errors -----------------------------------------------------------------------


def test_tracer_errors_have_jax_classes_say_what_is_abstract_and_point_to_the_page():
    def f(x, y):
        return x if (x * 2 > y).all() else y

    with pytest.raises(plax.errors.TracerBoolConversionError) as info:
        plax.jit(f)(1.0, 2.0)
    message = str(info.value)
    assert "abstract" in message and "concrete" in message
    assert "depends on the value of the arguments x, y" in message
    assert "`python -m plax.errors TracerBoolConversionError`" in message
    assert isinstance(info.value, plax.errors.ConcretizationTypeError)
    assert isinstance(info.value, plax.errors.JAXTypeError) and isinstance(info.value, TypeError)
    with pytest.raises(plax.errors.ConcretizationTypeError, match="`int` conversion"):
        plax.jit(lambda x: int(x))(1.0)
    with pytest.raises(plax.errors.TracerIntegerConversionError, match="__index__"):
        plax.jit(lambda i: [1, 2, 3][i])(1)
    with pytest.raises(plax.errors.NonConcreteBooleanIndexError) as info:
        plax.jit(lambda x: x[x > 0])(jnp.ones(2))
    assert isinstance(info.value, IndexError)
    with pytest.raises(ValueError, match="truth value of an array with more than one"):
        plax.jit(lambda x: bool(x))(jnp.ones(2))


def test_the_errors_page_explains_every_public_error_class():
    from plax._src.errors import reference_text
    page = reference_text()
    for name in dir(plax.errors):
        obj = getattr(plax.errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException) and \
                name not in ("JAXTypeError", "JAXIndexError"):
            assert f"## {name.lower()}" in page, name


# --- eager autodiff of custom rules ------------------------------------------------------


@plax.custom_jvp
def _clipped_sin(x):
    if x > 0:  # Python control flow on the primal value
        return jnp.sin(x)
    return x


@_clipped_sin.defjvp
def _clipped_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if x > 0:
        return _clipped_sin(x), jnp.cos(x) * t
    return x, t


@plax.custom_vjp
def _abs_twice(x):
    return 2 * x if x > 0 else -x


_abs_twice.defvjp(lambda x: (_abs_twice(x), x),
                  lambda x, ct: (ct * (2.0 if x > 0 else -1.0),))


def test_grad_of_custom_rules_runs_them_on_concrete_values_outside_jit():
    np.testing.assert_allclose(plax.grad(_clipped_sin)(1.0), np.cos(1.0), rtol=1e-6)
    assert float(plax.grad(_clipped_sin)(-1.0)) == 1.0
    np.testing.assert_allclose(plax.jvp(_clipped_sin, (1.0,), (2.0,))[1], 2 * np.cos(1.0),
                               rtol=1e-6)
    np.testing.assert_allclose(plax.grad(plax.grad(_clipped_sin))(1.0), -np.sin(1.0), rtol=1e-6)
    assert float(plax.grad(_abs_twice)(3.0)) == 2.0
    assert float(plax.grad(_abs_twice)(-3.0)) == -1.0
    with pytest.raises(plax.errors.TracerBoolConversionError):  # under jit it is staged
        plax.jit(plax.grad(_clipped_sin))(1.0)


def test_take_along_axis_defaults_to_the_last_axis_as_jax():
    x = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(jnp.take_along_axis(x, np.array([[2], [0]])), [[2], [3]])


# --- leftovers of the 5,000-case differential run ----------------------------------------------


def test_max_and_min_of_complex_order_by_real_then_imaginary_part():
    x = np.array([1 + 2j, 3 - 1j, 3 + 0j, -1 + 5j], np.complex64)
    for fn in (jnp.max, jnp.amax, plax.jit(jnp.max), lambda v: lax.reduce_max(v, (0,))):
        assert complex(fn(x)) == 3 + 0j
    for fn in (jnp.min, jnp.amin, plax.jit(jnp.min), lambda v: lax.reduce_min(v, (0,))):
        assert complex(fn(x)) == -1 + 5j
    np.testing.assert_array_equal(jnp.max(x.reshape(2, 2), axis=1), [3 - 1j, 3 + 0j])
    np.testing.assert_array_equal(plax.vmap(jnp.min)(x.reshape(2, 2)), [1 + 2j, -1 + 5j])
    assert complex(jnp.max(x, where=np.array([1, 0, 0, 1], bool), initial=-5j)) == 1 + 2j
    # The tangent and cotangent follow the element picked, as for real operands.
    _, tangent = plax.jvp(jnp.max, (x,), (x * 2,))
    assert complex(tangent) == 6 + 0j
    np.testing.assert_array_equal(plax.grad(lambda v: jnp.max(v).real)(x), [0, 0, 1, 0])
    # argmax/argmin of complex stay refused, as in JAX.
    with pytest.raises(TypeError):
        jnp.argmax(x)


_B, _I16 = np.array([True, False]), np.array([1, -3], np.int16)


# (function, whether JAX 0.10.2 marks its bool result weak): a comparison or predicate is
# weak exactly when its operands are weak after promotion (Python scalars; a Python int
# meeting a bool array promotes to a weak int, a Python float meeting int16 a weak float).
@pytest.mark.parametrize("fn,weak", [
    (lambda: jnp.greater_equal(_B, 2), True), (lambda: jnp.equal(_I16, -2.5), True),
    (lambda: jnp.equal(_I16, 2), False), (lambda: jnp.less(2, 3.0), True),
    (lambda: jnp.equal(_B, True), False), (lambda: jnp.isfinite(-2.5), True),
    (lambda: jnp.isfinite(3), False), (lambda: jnp.isinf(-2.5), False),
    (lambda: jnp.isnan(-2.5), True), (lambda: jnp.isnan(2), True),
    (lambda: jnp.logical_not(255), True), (lambda: jnp.logical_not(True), False),
    (lambda: jnp.logical_not(2.5), True), (lambda: jnp.logical_or(2.0, 3), True),
    (lambda: jnp.logical_and(2, _B), False), (lambda: jnp.isreal(-129), True),
    (lambda: jnp.iscomplex(2.5), True), (lambda: jnp.isreal(_I16), False),
    (lambda: jnp.isposinf(2), False), (lambda: jnp.array_equal(2, 2), False),
    (lambda: lax.eq(2, 3), True), (lambda: lax.is_finite(2.0), True),
    (lambda: jnp.all(jnp.equal(2, 2)), False),
    (lambda: lax.reduce_or(jnp.broadcast_to(jnp.equal(2, 2), (2,)), (0,)), False),
    (lambda: lax.reduce_max(jnp.broadcast_to(jnp.equal(2, 2), (2,)), (0,)), True),
    (lambda: jnp.max(2.5), False), (lambda: jnp.equal(2, 2) + 1, True),
])
def test_bool_results_of_weak_operands_are_weak_as_in_jax(fn, weak):
    for run in (fn, plax.jit(fn)):
        out = run()
        assert out.weak_type == weak
    assert plax.make_jaxpr(fn)().out_avals[0].weak_type == weak


def test_pad_keeps_the_default_dtype_of_a_python_padding_value_as_jax():
    x8 = np.arange(4, dtype=np.int8)
    for bad in (lambda: lax.pad(x8, 0, [(1, 1, 0)]),
                lambda: lax.pad(np.ones(2, np.float32), 0, [(1, 1, 0)]),
                lambda: plax.jit(lambda v: lax.pad(v, 0, [(1, 1, 0)]))(x8)):
        with pytest.raises(TypeError, match="same dtype.*int8|same dtype.*float32"):
            bad()
    np.testing.assert_array_equal(lax.pad(x8, np.int8(7), [(1, 0, 0)]), [7, 0, 1, 2, 3])
    np.testing.assert_array_equal(lax.pad(np.ones(2, np.float32), 0.0, [(0, 1, 0)]), [1, 1, 0])


def test_kron_of_bool_arrays_is_a_type_error_as_in_jax():
    b = np.array([True, False])
    with pytest.raises(TypeError, match="mul does not accept dtype bool"):
        jnp.kron(b, b)
    np.testing.assert_array_equal(jnp.kron(b, np.array([1, 2])), np.kron(b, [1, 2]))


@pytest.mark.parametrize("split,indices", [
    (jnp.split, [4, 2]), (jnp.split, [2, 8]), (jnp.split, [-1, 2]),
    (jnp.array_split, (2, 1, 1)), (jnp.hsplit, [4, 2]),
])
def test_split_indices_giving_negative_sizes_are_value_errors_as_in_jax(split, indices):
    with pytest.raises(ValueError, match="Sizes passed to split must be nonnegative"):
        split(np.arange(6.0), indices)


def test_split_indices_giving_empty_sections_and_bad_section_counts():
    parts = jnp.split(np.arange(6.0), [4, 4])
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [], [4, 5]]
    with pytest.raises(ValueError):  # JAX: "Sum of sizes ... must be equal"
        jnp.array_split(np.arange(6.0), -1)


def test_geomspace_through_zero_is_nan_as_jax():
    assert np.isnan(np.asarray(jnp.geomspace(0, 1, 2))).all()


def test_pad_checks_the_config_length_before_the_padding_dtype():
    with pytest.raises(ValueError, match="padding_config"):
        plax.lax.pad(np.zeros((3, 2, 2), np.complex64), 0.0, [(-1, 0, 2), (-2, -2, 2)])
