"""Abstract evaluation of the `lax` primitives: result shapes and dtypes against
NumPy's, weak types, and the errors bad operands and parameters raise."""
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import plax
from plax import lax
from plax.extend.core import ShapeDtypeStruct
from plax.test_util import check_grads

F16, F32, C64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64)
I8, I32, U8, BOOL = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(bool)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [F16, BF16, F32, C64, I8, I32, U8, BOOL]


def avals(fun, *args):
    """The output avals of `fun` traced on `args` (arrays or ShapeDtypeStructs)."""
    return plax.make_jaxpr(fun)(*args).out_avals


def aval(fun, *args):
    (out,) = avals(fun, *args)
    return out


def sds(shape, dtype=F32, weak_type=False):
    return ShapeDtypeStruct(shape, dtype, weak_type=weak_type)


shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


# --- elementwise ---------------------------------------------------------------------------

FLOAT, COMPLEX, SIGNED, UNSIGNED = {F16, BF16, F32}, {C64}, {I8, I32}, {U8}
INEXACT, INT, NUM = FLOAT | COMPLEX, SIGNED | UNSIGNED, FLOAT | COMPLEX | SIGNED | UNSIGNED
ANY = NUM | {BOOL}


def same(dt):
    return dt


def real_part(dt):
    return F32 if dt == C64 else dt


def boolean(dt):
    return BOOL


# name → (function of one operand, accepted dtypes, result dtype)
UNARY = {
    "neg": (lax.neg, NUM, same), "sign": (lax.sign, NUM, same),
    "floor": (lax.floor, FLOAT, same), "ceil": (lax.ceil, FLOAT, same),
    "round": (lax.round, FLOAT, same), "is_finite": (lax.is_finite, FLOAT, boolean),
    "exp": (lax.exp, INEXACT, same), "exp2": (lax.exp2, INEXACT, same),
    "log": (lax.log, INEXACT, same), "log1p": (lax.log1p, INEXACT, same),
    "expm1": (lax.expm1, INEXACT, same), "tanh": (lax.tanh, INEXACT, same),
    "logistic": (lax.logistic, INEXACT, same), "sin": (lax.sin, INEXACT, same),
    "cos": (lax.cos, INEXACT, same), "tan": (lax.tan, INEXACT, same),
    "asin": (lax.asin, INEXACT, same), "acos": (lax.acos, INEXACT, same),
    "atan": (lax.atan, INEXACT, same), "sinh": (lax.sinh, INEXACT, same),
    "cosh": (lax.cosh, INEXACT, same), "asinh": (lax.asinh, INEXACT, same),
    "acosh": (lax.acosh, INEXACT, same), "atanh": (lax.atanh, INEXACT, same),
    "sqrt": (lax.sqrt, INEXACT, same), "rsqrt": (lax.rsqrt, INEXACT, same),
    "cbrt": (lax.cbrt, FLOAT, same), "square": (lax.square, NUM, same),
    "abs": (lax.abs, SIGNED | INEXACT, real_part),
    "real": (lax.real, COMPLEX, real_part), "imag": (lax.imag, COMPLEX, real_part),
    "conj": (lax.conj, INEXACT, lambda dt: C64),
    "erf": (lax.erf, FLOAT, same), "erfc": (lax.erfc, FLOAT, same),
    "erf_inv": (lax.erf_inv, FLOAT, same), "lgamma": (lax.lgamma, FLOAT, same),
    "digamma": (lax.digamma, FLOAT, same), "not": (lax.bitwise_not, INT | {BOOL}, same),
    "population_count": (lax.population_count, INT, same), "clz": (lax.clz, INT, same),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), NUM, same),
}

BINARY = {
    "add": (lax.add, NUM, same), "sub": (lax.sub, NUM, same), "mul": (lax.mul, NUM, same),
    "div": (lax.div, NUM, same), "rem": (lax.rem, INT | FLOAT, same),
    "max": (lax.max, ANY, same), "min": (lax.min, ANY, same),
    "atan2": (lax.atan2, FLOAT, same), "nextafter": (lax.nextafter, FLOAT, same),
    "complex": (lax.complex, {F32}, lambda dt: C64),
    "eq": (lax.eq, ANY, boolean), "ne": (lax.ne, ANY, boolean),
    "lt": (lax.lt, ANY - COMPLEX, boolean), "le": (lax.le, ANY - COMPLEX, boolean),
    "gt": (lax.gt, ANY - COMPLEX, boolean), "ge": (lax.ge, ANY - COMPLEX, boolean),
    "and": (lax.bitwise_and, INT | {BOOL}, same), "or": (lax.bitwise_or, INT | {BOOL}, same),
    "xor": (lax.bitwise_xor, INT | {BOOL}, same),
    "shift_left": (lax.shift_left, INT, same),
    "shift_right_logical": (lax.shift_right_logical, INT, same),
    "shift_right_arithmetic": (lax.shift_right_arithmetic, INT, same),
    "pow": (lax.pow, INEXACT, same),
}


@given(st.sampled_from(sorted(UNARY)), shapes, st.sampled_from(DTYPES))
def test_unary_shapes_and_dtypes(name, shape, dtype):
    fun, accepted, result_dtype = UNARY[name]
    if dtype in accepted:
        out = aval(fun, sds(shape, dtype))
        assert (out.shape, out.dtype) == (shape, result_dtype(dtype))
    else:
        with pytest.raises(TypeError, match=rf"{name} does not accept dtype {dtype.name}"):
            aval(fun, sds(shape, dtype))


@given(st.sampled_from(sorted(BINARY)), shapes, st.sampled_from(DTYPES))
def test_binary_shapes_and_dtypes(name, shape, dtype):
    fun, accepted, result_dtype = BINARY[name]
    if dtype in accepted:
        out = aval(fun, sds(shape, dtype), sds(shape, dtype))
        assert (out.shape, out.dtype) == (shape, result_dtype(dtype))
    else:
        with pytest.raises(TypeError, match=rf"{name} does not accept dtype {dtype.name}"):
            aval(fun, sds(shape, dtype), sds(shape, dtype))


@given(st.data(), shapes)
def test_binary_broadcasting_matches_numpy(data, shape):
    """Equal ranks broadcast size-1 dimensions; rank-0 operands broadcast to anything."""
    def variant():
        if data.draw(st.booleans()) and data.draw(st.booleans()):
            return ()
        return tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    x_shape, y_shape = variant(), variant()
    expected = np.broadcast_shapes(x_shape, y_shape)
    assert aval(lax.mul, sds(x_shape), sds(y_shape)).shape == expected


@given(hnp.array_shapes(min_dims=1, max_dims=4, min_side=2, max_side=4), st.data())
def test_binary_incompatible_shapes_name_both(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    other = shape[:axis] + (shape[axis] + 1,) + shape[axis + 1:]
    with pytest.raises(TypeError, match=re.escape(f"add got incompatible shapes for "
                                                  f"broadcasting: {shape}, {other}")):
        aval(lax.add, sds(shape), sds(other))


def test_binary_errors_name_shapes_and_dtypes():
    with pytest.raises(TypeError, match=re.escape("add got incompatible shapes for "
                                                  "broadcasting: (3,), (4,)")):
        aval(lax.add, sds((3,)), sds((4,)))
    with pytest.raises(TypeError, match=r"same rank .* \(2, 3\), \(3,\)"):
        aval(lax.add, sds((2, 3)), sds((3,)))
    with pytest.raises(TypeError, match=r"add requires arguments to have the same dtype, "
                                        r"got float32\[3\], int32\[3\]"):
        aval(lax.add, sds((3,)), sds((3,), I32))
    with pytest.raises(TypeError, match=r"complex does not accept dtype float16"):
        aval(lax.complex, sds((3,), F16), sds((3,), F16))


def test_weak_types():
    weak, strong = sds((2,), F32, weak_type=True), sds((2,), F32)
    assert aval(lax.add, weak, weak).weak_type
    assert not aval(lax.add, weak, strong).weak_type
    assert aval(lambda x: lax.mul(x, 2.0), weak).weak_type
    assert aval(lax.lt, weak, weak).weak_type  # bool results of weak operands too, as in JAX
    assert not aval(lax.lt, weak, strong).weak_type
    assert aval(lax.sin, weak).weak_type
    assert aval(lambda x: lax.reduce_sum(x, (0,)), weak).weak_type


def test_pow_accepts_integer_exponents():
    assert aval(lax.pow, sds((3,)), sds((3,), I32)).dtype == F32
    assert aval(lambda x: lax.pow(x, 2), sds((3,), C64)).dtype == C64
    with pytest.raises(TypeError, match="pow requires arguments to have the same dtype"):
        aval(lax.pow, sds((3,)), sds((3,), F16))
    with pytest.raises(TypeError, match="pow does not accept dtype int32"):
        aval(lax.pow, sds((3,), I32), sds((3,), I32))


def test_integer_pow_rejects_negative_integer_powers():
    assert aval(lambda x: lax.integer_pow(x, -2), sds((3,))).dtype == F32
    with pytest.raises(TypeError, match=r"negative power -2 .*int32\[3\]"):
        aval(lambda x: lax.integer_pow(x, -2), sds((3,), I32))


@given(shapes, st.integers(2, 4))
def test_select_n_and_clamp(shape, n):
    cases = [sds(shape)] * n
    assert aval(lax.select_n, sds(shape, I32), *cases).shape == shape
    assert aval(lax.select_n, sds((), I32), *cases).shape == shape
    assert aval(lax.clamp, sds(()), sds(shape), sds(shape)).shape == shape


def test_select_n_and_clamp_errors():
    with pytest.raises(TypeError, match=r"`which` to be bool or an integer, got float32\[3\]"):
        aval(lax.select_n, sds((3,)), sds((3,)), sds((3,)))
    with pytest.raises(TypeError, match="at most 2 cases"):
        aval(lax.select_n, sds((3,), BOOL), *[sds((3,))] * 3)
    with pytest.raises(TypeError, match=r"same shape, got float32\[3\], float32\[4\]"):
        aval(lax.select_n, sds((), BOOL), sds((3,)), sds((4,)))
    with pytest.raises(TypeError, match=r"which bool\[2\] and cases float32\[3\]"):
        aval(lax.select_n, sds((2,), BOOL), sds((3,)), sds((3,)))
    with pytest.raises(TypeError, match=r"min float32\[2\] and operand float32\[3\]"):
        aval(lax.clamp, sds((2,)), sds((3,)), sds(()))
    with pytest.raises(TypeError, match="select does not accept dtype int32"):
        aval(lax.select, sds((3,), I32), sds((3,)), sds((3,)))


# --- dtype conversions ------------------------------------------------------------------------

@given(shapes, st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_convert_element_type(shape, old, new):
    out = aval(lambda x: lax.convert_element_type(x, new), sds(shape, old))
    assert (out.shape, out.dtype, out.weak_type) == (shape, new, False)


@pytest.mark.parametrize("old, new", [(F32, U8), (U8, F32), (I32, F32), (F16, I8), (I8, I8)])
def test_bitcast_convert_type_shapes_match_numpy_view(old, new):
    x = np.zeros((2, 4), old)
    expected = x.view(new).shape
    if old.itemsize > new.itemsize:  # NumPy flattens into the last axis; lax adds one
        expected = x.shape + (old.itemsize // new.itemsize,)
    elif old.itemsize < new.itemsize:
        x = np.zeros((2, new.itemsize // old.itemsize), old)
        expected = x.shape[:-1]
    assert aval(lambda v: lax.bitcast_convert_type(v, new), x).shape == expected


def test_bitcast_convert_type_errors():
    with pytest.raises(ValueError, match=r"requires a last dimension of size 4"):  # JAX's
        aval(lambda v: lax.bitcast_convert_type(v, F32), sds((2, 3), U8))
    with pytest.raises(TypeError, match="bool and complex values convert only to their own"):
        aval(lambda v: lax.bitcast_convert_type(v, U8), sds((2,), BOOL))


# --- shape operations -------------------------------------------------------------------------

@st.composite
def reshapes(draw):
    """A shape and another of the same size, made by permuting and regrouping dims."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    dims = draw(st.permutations(list(shape)))
    new, i = [], 0
    while i < len(dims):
        j = draw(st.integers(i + 1, len(dims)))
        new.append(int(np.prod(dims[i:j])))
        i = j
    for _ in range(draw(st.integers(0, 2))):
        new.insert(draw(st.integers(0, len(new))), 1)
    return shape, tuple(new)


@given(reshapes(), st.booleans())
def test_reshape_matches_numpy(shapes_pair, permute):
    shape, new = shapes_pair
    dims = tuple(reversed(range(len(shape)))) if permute else None
    expected = np.transpose(np.zeros(shape), dims).reshape(new).shape
    assert aval(lambda x: lax.reshape(x, new, dims), sds(shape)).shape == expected


def test_reshape_errors():
    with pytest.raises(TypeError, match=r"new_sizes \(4, 2\) for operand float32\[3,2\]"):
        aval(lambda x: lax.reshape(x, (4, 2)), sds((3, 2)))
    with pytest.raises(plax.errors.InvalidShapeError, match="non-negative dimensions"):
        aval(lambda x: lax.reshape(x, (-1, 2)), sds((3, 2)))
    with pytest.raises(TypeError, match=r"dimensions \(0, 0\) is not a permutation"):
        aval(lambda x: lax.reshape(x, (6,), (0, 0)), sds((3, 2)))


@given(st.data(), shapes)
def test_transpose_matches_numpy(data, shape):
    perm = data.draw(st.permutations(range(len(shape))))
    expected = np.transpose(np.zeros(shape), perm).shape
    assert aval(lambda x: lax.transpose(x, perm), sds(shape)).shape == expected
    with pytest.raises(TypeError, match="not a permutation"):  # JAX's class
        aval(lambda x: lax.transpose(x, tuple(perm) + (0,)), sds(shape))


@given(shapes, st.data())
def test_broadcast_in_dim_matches_numpy(shape, data):
    out_rank = len(shape) + data.draw(st.integers(0, 2))
    dims = sorted(data.draw(st.permutations(range(out_rank)))[:len(shape)])
    out_shape = [data.draw(st.integers(0, 3)) for _ in range(out_rank)]
    operand_shape = list(shape)
    for i, d in enumerate(dims):
        out_shape[d] = shape[i]
        if data.draw(st.booleans()):
            operand_shape[i] = 1
    out_shape = tuple(out_shape)
    expanded = np.zeros(operand_shape).reshape(
        [operand_shape[dims.index(d)] if d in dims else 1 for d in range(out_rank)])
    expected = np.broadcast_to(expanded, out_shape).shape
    fun = lambda x: lax.broadcast_in_dim(x, out_shape, dims)
    assert aval(fun, sds(tuple(operand_shape))).shape == expected


def test_broadcast_in_dim_errors():
    with pytest.raises(TypeError, match=r"operand float32\[3\] cannot be broadcast to shape "
                                        r"\(4,\)"):
        aval(lambda x: lax.broadcast_in_dim(x, (4,), (0,)), sds((3,)))
    with pytest.raises(TypeError, match="one entry per operand dimension"):
        aval(lambda x: lax.broadcast_in_dim(x, (3, 3), (0, 1)), sds((3,)))
    with pytest.raises(TypeError, match=r"\(1, 1\) map two operand dimensions to one"):
        aval(lambda x: lax.broadcast_in_dim(x, (3, 3), (1, 1)), sds((3, 1)))
    with pytest.raises(TypeError, match="out of range"):
        aval(lambda x: lax.broadcast_in_dim(x, (3,), (1,)), sds((3,)))


def test_broadcast_in_dim_takes_dimensions_in_any_order():
    # out of order, broadcast_dimensions also transpose (JAX 0.10.2 takes them); the
    # derivative sums the stretched dimensions and transposes back, and vmap keeps them
    x = np.arange(6, dtype=F32).reshape(2, 3)
    fun = lambda a: lax.broadcast_in_dim(a, (3, 4, 2), (2, 0))  # noqa: E731
    want = np.broadcast_to(x.T[:, None, :], (3, 4, 2))
    np.testing.assert_array_equal(fun(x), want)
    np.testing.assert_array_equal(plax.jit(fun)(x), want)
    np.testing.assert_array_equal(plax.vmap(fun, in_axes=1)(np.stack([x, x + 1], 1)),
                                  [want, want + 1])
    np.testing.assert_array_equal(plax.vmap(fun)(np.stack([x, x + 1])), [want, want + 1])
    weights = np.arange(24, dtype=F32).reshape(3, 4, 2)
    np.testing.assert_array_equal(plax.grad(lambda a: (fun(a) * weights).sum())(x),
                                  weights.sum(1).T)
    column = np.arange(3, dtype=F32).reshape(3, 1)
    stretch = lambda a: lax.broadcast_in_dim(a, (2, 3, 4), (1, 0))  # noqa: E731
    np.testing.assert_array_equal(plax.grad(lambda a: (stretch(a) * weights.reshape(2, 3, 4))
                                            .sum())(column),
                                  weights.reshape(2, 3, 4).sum((0, 2))[:, None])
    check_grads(fun, (x,), order=2)


@given(shapes, st.data())
def test_squeeze_expand_dims_broadcast_match_numpy(shape, data):
    ones = [i for i, d in enumerate(shape) if d == 1]
    dims = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    assert (aval(lambda x: lax.squeeze(x, dims), sds(shape)).shape
            == np.squeeze(np.zeros(shape), tuple(dims)).shape)
    new_axes = data.draw(st.lists(st.integers(-len(shape) - 2, len(shape) + 1), unique=True,
                                  max_size=2))
    try:
        expected = np.expand_dims(np.zeros(shape), tuple(new_axes)).shape
    except (ValueError, np.exceptions.AxisError):
        with pytest.raises(ValueError):
            aval(lambda x: lax.expand_dims(x, new_axes), sds(shape))
    else:
        assert aval(lambda x: lax.expand_dims(x, new_axes), sds(shape)).shape == expected
    assert aval(lambda x: lax.broadcast(x, (2, 3)), sds(shape)).shape == (2, 3) + shape


def test_squeeze_errors():
    with pytest.raises(ValueError, match=r"cannot remove dimensions \(0,\) of operand "
                                         r"float32\[2,1\]"):
        aval(lambda x: lax.squeeze(x, (0,)), sds((2, 1)))
    with pytest.raises(ValueError, match="out of bounds"):
        aval(lambda x: lax.squeeze(x, (2,)), sds((2, 1)))


@given(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3), st.data())
def test_concatenate_matches_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    operands = []
    for size in sizes:
        s = list(shape)
        s[axis] = size
        operands.append(np.zeros(s, np.float32))
    expected = np.concatenate(operands, axis).shape
    assert aval(lambda *xs: lax.concatenate(xs, axis), *operands).shape == expected


def test_concatenate_errors():
    with pytest.raises(TypeError, match=r"agree except on dimension 0, got float32\[2,3\], "
                                        r"float32\[2,4\]"):
        aval(lambda x, y: lax.concatenate([x, y], 0), sds((2, 3)), sds((2, 4)))
    with pytest.raises(TypeError, match="same dtype"):
        aval(lambda x, y: lax.concatenate([x, y], 0), sds((2,)), sds((2,), I32))
    with pytest.raises(ValueError, match="non-empty"):
        lax.concatenate([], 0)


def pad_reference(x: np.ndarray, value, config) -> np.ndarray:
    """Interior padding by strided assignment, then edge padding (negative crops)."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        shape = list(x.shape)
        shape[axis] = n + max(n - 1, 0) * interior
        spread = np.full(shape, value, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(None, None, interior + 1)
        spread[tuple(index)] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        x = np.pad(spread, widths, constant_values=value)
        index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
        x = x[tuple(index)]
    return x


@given(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), st.data())
def test_pad_matches_reference(shape, data):
    config = [(data.draw(st.integers(-2, 2)), data.draw(st.integers(-2, 2)),
               data.draw(st.integers(0, 2))) for _ in shape]
    sizes = [lo + hi + d + max(d - 1, 0) * i for d, (lo, hi, i) in zip(shape, config)]
    fun = lambda x: lax.pad(x, 0.0, config)
    if any(s < 0 for s in sizes):
        with pytest.raises(ValueError, match="negative shape"):
            aval(fun, sds(shape))
    else:
        expected = pad_reference(np.zeros(shape, np.float32), 0.0, config).shape
        assert aval(fun, sds(shape)).shape == expected


def test_pad_errors():
    with pytest.raises(TypeError, match="scalar padding_value"):
        aval(lambda x, v: lax.pad(x, v, [(0, 0, 0)]), sds((2,)), sds((1,)))
    with pytest.raises(ValueError, match="needs one"):  # JAX's class
        aval(lambda x: lax.pad(x, 0.0, [(0, 0, 0)]), sds((2, 2)))
    with pytest.raises(ValueError, match="interior padding must be non-negative"):
        aval(lambda x: lax.pad(x, 0.0, [(0, 0, -1)]), sds((2,)))
    # The result shape is checked before the dtypes, as JAX does (found by the fuzzer).
    with pytest.raises(ValueError, match="negative shape"):
        aval(lambda x: lax.pad(x, 1.5, [(1, 0, 2), (-2, -1, 1)]), sds((3, 1), np.complex64))
    with pytest.raises(TypeError, match="same dtype"):
        aval(lambda x: lax.pad(x, np.float32(1.5), [(1, 0, 0)]), sds((3,), np.complex64))


@given(shapes, st.data())
def test_rev_and_sort_keep_shapes(shape, data):
    dims = data.draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True)) \
        if shape else []
    assert aval(lambda x: lax.rev(x, dims), sds(shape)).shape == shape
    if shape:
        keys, values = avals(lambda k, v: lax.sort_key_val(k, v), sds(shape), sds(shape, I32))
        assert (keys.shape, keys.dtype, values.shape, values.dtype) == (shape, F32, shape, I32)


def test_sort_errors():
    with pytest.raises(TypeError, match=r"same shape, got float32\[2\], float32\[3\]"):
        avals(lambda x, y: lax.sort((x, y)), sds((2,)), sds((3,)))
    with pytest.raises(ValueError, match="num_keys"):
        avals(lambda x: lax.sort(x, num_keys=2), sds((2,)))


# --- slicing --------------------------------------------------------------------------------

@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), st.data())
def test_slice_matches_numpy(shape, data):
    starts, limits, strides = [], [], []
    for d in shape:
        start = data.draw(st.integers(0, d))
        starts.append(start)
        limits.append(data.draw(st.integers(start, d)))
        strides.append(data.draw(st.integers(1, 3)))
    expected = np.zeros(shape)[tuple(map(slice, starts, limits, strides))].shape
    assert aval(lambda x: lax.slice(x, starts, limits, strides), sds(shape)).shape == expected


def test_slice_errors():
    # JAX's classes (its shape rule's): TypeErrors, but a zero stride is a ValueError.
    with pytest.raises(TypeError, match=r"bounds \[1:4\] of dimension 0 are not within "
                                        r"\[0, 3\]"):
        aval(lambda x: lax.slice(x, (1,), (4,)), sds((3,)))
    with pytest.raises(ValueError, match="strides must be positive"):
        aval(lambda x: lax.slice(x, (0,), (3,), (0,)), sds((3,)))
    with pytest.raises(TypeError, match="one entry per dimension"):
        aval(lambda x: lax.slice(x, (0,), (3,)), sds((3, 3)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        aval(lambda x: lax.index_in_dim(x, 3), sds((3,)))


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), st.data())
def test_dynamic_slice_shapes(shape, data):
    sizes = tuple(data.draw(st.integers(0, d)) for d in shape)
    out = aval(lambda x, i: lax.dynamic_slice(x, [i] * len(shape), sizes), sds(shape),
               sds((), I32))
    assert out.shape == sizes
    update = sds(sizes)
    out = aval(lambda x, u, i: lax.dynamic_update_slice(x, u, [i] * len(shape)), sds(shape),
               update, sds((), I32))
    assert out.shape == shape


def test_dynamic_slice_errors():
    with pytest.raises(TypeError, match=r"slice_sizes \(4,\) must be non-negative and fit"):
        aval(lambda x: lax.dynamic_slice(x, (0,), (4,)), sds((3,)))
    with pytest.raises(TypeError, match="dynamic_slice does not accept dtype float32"):
        aval(lambda x, i: lax.dynamic_slice(x, (i,), (1,)), sds((3,)), sds((), F32))
    with pytest.raises(TypeError, match=r"scalar start indices, got int32\[1\]"):
        aval(lambda x, i: lax.dynamic_slice_p.bind(x, i, slice_sizes=(1,)), sds((3,)),
             sds((1,), I32))
    with pytest.raises(TypeError, match=r"update float32\[4\] for operand float32\[3\]"):
        aval(lambda x, u: lax.dynamic_update_slice(x, u, (0,)), sds((3,)), sds((4,)))


# --- reductions, cumulative reductions --------------------------------------------------------

REDUCTIONS = {
    "reduce_sum": (lax.reduce_sum, NUM), "reduce_prod": (lax.reduce_prod, NUM),
    # max and min accept complex operands, as JAX's do
    "reduce_max": (lax.reduce_max, ANY), "reduce_min": (lax.reduce_min, ANY),
    "reduce_and": (lax.reduce_and, INT | {BOOL}), "reduce_or": (lax.reduce_or, INT | {BOOL}),
    "reduce_xor": (lax.reduce_xor, INT | {BOOL}),
}


@given(st.sampled_from(sorted(REDUCTIONS)), shapes, st.sampled_from(DTYPES), st.data())
def test_reductions_match_numpy(name, shape, dtype, data):
    fun, accepted = REDUCTIONS[name]
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True,
                              max_size=len(shape))) if shape else []
    operand = sds(shape, dtype)
    if dtype not in accepted:
        with pytest.raises(TypeError, match=rf"{name} does not accept dtype {dtype.name}"):
            aval(lambda x: fun(x, axes), operand)
        return
    out = aval(lambda x: fun(x, axes), operand)
    assert (out.shape, out.dtype) == (np.sum(np.zeros(shape), tuple(axes)).shape, dtype)


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_argmax_cumsum_match_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    out = aval(lambda x: lax.argmax(x, axis, np.int32), sds(shape))
    assert (out.shape, out.dtype) == (np.argmax(np.zeros(shape), axis).shape, I32)
    for fun in (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp):
        assert aval(lambda x: fun(x, axis, reverse=True), sds(shape)).shape == shape  # noqa: B023 (run at once)


def test_reduction_errors():
    with pytest.raises(ValueError, match="reduce_sum: axis 2 is out of bounds"):
        aval(lambda x: lax.reduce_sum(x, (2,)), sds((2, 3)))
    with pytest.raises(ValueError, match="repeated axis"):
        aval(lambda x: lax.reduce_sum(x, (1, 1)), sds((2, 3)))
    # lax takes no negative axes, as JAX's (the class of each of JAX's errors)
    for fun, error in ((lambda x: lax.reduce_sum(x, (-1,)), ValueError),
                       (lambda x: lax.reduce_max(x, (0, -1)), ValueError),
                       (lambda x: lax.argmax(x, -1, np.int32), ValueError),
                       (lambda x: lax.cumsum(x, -2), ValueError),
                       (lambda x: lax.rev(x, (-1,)), TypeError),
                       (lambda x: lax.concatenate([x, x], -1), TypeError)):
        with pytest.raises(error, match="is negative"):
            aval(fun, sds((2, 3)))
    with pytest.raises(ValueError, match="is negative"):
        lax.broadcasted_iota(np.int32, (2, 3), -1)
    with pytest.raises(ValueError, match="reduces exactly one axis"):
        aval(lambda x: lax.argmax_p.bind(x, axes=(0, 1), index_dtype=I32), sds((2, 3)))
    with pytest.raises(ValueError, match="argmin of an empty axis"):
        aval(lambda x: lax.argmin(x, 0, np.int32), sds((0, 3)))
    with pytest.raises(TypeError, match="argmax does not accept dtype float32"):
        aval(lambda x: lax.argmax(x, 0, np.float32), sds((2,)))
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        aval(lax.cumlogsumexp, sds((3,), I32))


# --- dot_general ---------------------------------------------------------------------------------

@st.composite
def dot_problems(draw):
    """Operand shapes, dimension numbers and the einsum spec computing the same thing."""
    letters = iter("abcdefghij")
    batch = [(next(letters), draw(st.integers(1, 3))) for _ in range(draw(st.integers(0, 2)))]
    contract = [(next(letters), draw(st.integers(0, 3))) for _ in range(draw(st.integers(0, 2)))]
    lhs_free = [(next(letters), draw(st.integers(1, 3))) for _ in range(draw(st.integers(0, 2)))]
    rhs_free = [(next(letters), draw(st.integers(1, 3))) for _ in range(draw(st.integers(0, 2)))]
    lhs = draw(st.permutations(batch + contract + lhs_free))
    rhs = draw(st.permutations(batch + contract + rhs_free))
    position = lambda dims, letter: [d for d, _ in dims].index(letter)
    dnums = ((tuple(position(lhs, c) for c, _ in contract),
              tuple(position(rhs, c) for c, _ in contract)),
             (tuple(position(lhs, b) for b, _ in batch), tuple(position(rhs, b) for b, _ in batch)))
    free = [d for d in lhs if d in lhs_free] + [d for d in rhs if d in rhs_free]
    spec = (f"{''.join(d for d, _ in lhs)},{''.join(d for d, _ in rhs)}->"
            f"{''.join(d for d, _ in batch + free)}")
    return tuple(s for _, s in lhs), tuple(s for _, s in rhs), dnums, spec


@given(dot_problems())
def test_dot_general_matches_einsum(problem):
    lhs_shape, rhs_shape, dnums, spec = problem
    expected = np.einsum(spec, np.zeros(lhs_shape), np.zeros(rhs_shape)).shape
    out = aval(lambda x, y: lax.dot_general(x, y, dnums), sds(lhs_shape), sds(rhs_shape))
    assert out.shape == expected


def test_dot_general_dtypes_and_errors():
    i8 = sds((2, 3), I8)
    dn = (((1,), (0,)), ((), ()))
    assert aval(lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=np.int32),
                i8, sds((3, 2), I8)).dtype == I32
    assert aval(lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=np.float32),
                i8, sds((3, 2), I8)).dtype == F32
    # as XLA's dot (and JAX): floats may narrow, integers may not (even to floats)
    assert aval(lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=F16),
                sds((2, 3)), sds((3, 2))).dtype == F16
    with pytest.raises(TypeError, match="narrower"):
        aval(lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=F16),
             sds((2, 3), I32), sds((3, 2), I32))
    with pytest.raises(TypeError, match="not compatible"):
        aval(lambda x, y: lax.dot_general(x, y, dn, preferred_element_type=np.int32),
             sds((2, 3)), sds((3, 2)))
    with pytest.raises(TypeError, match=re.escape(
            "dot_general requires contracting dimensions to have the same shape, got (3,) "
            "and (4,)")):
        aval(lambda x, y: lax.dot_general(x, y, dn), sds((2, 3)), sds((4, 2)))
    with pytest.raises(TypeError, match=re.escape(
            "dot_general requires batch dimensions to have the same shape, got (2,) and (5,)")):
        aval(lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((0,), (0,)))),
             sds((2, 3)), sds((5, 3)))
    with pytest.raises(TypeError, match="out of range"):  # JAX's class
        aval(lambda x, y: lax.dot_general(x, y, (((2,), (0,)), ((), ()))),
             sds((2, 3)), sds((3, 2)))
    # As in JAX, operands of different dtypes meet in their promoted dtype; bools work.
    assert aval(lambda x, y: lax.dot_general(x, y, dn), sds((2, 3)), sds((3, 2), F16)
                ).dtype == F32
    out = lax.dot_general(np.array([[True, False]]), np.array([[True], [True]]), dn)
    assert out.dtype == np.bool_ and out.tolist() == [[True]]
    with pytest.raises(TypeError, match="does not accept dtype float0"):
        aval(lambda x, y: lax.dot_general(x, y, dn), sds((2, 3)), sds((3, 2), np.dtype(
            plax.extend.dtypes.float0)))
    with pytest.raises(ValueError, match=re.escape("Incompatible shapes for dot: got (2, 3) "
                                                   "and (2, 3)")):
        aval(lax.dot, sds((2, 3)), sds((2, 3)))
    assert aval(lax.batch_matmul, sds((4, 2, 3)), sds((4, 3, 5))).shape == (4, 2, 5)


# --- creation -----------------------------------------------------------------------------------

@given(shapes, st.data())
def test_iota_and_full(shape, data):
    if shape:
        dim = data.draw(st.integers(0, len(shape) - 1))
        out = aval(lambda: lax.broadcasted_iota(np.int32, shape, dim))
        assert (out.shape, out.dtype) == (shape, I32)
    out = aval(lambda: lax.full(shape, 1.5))
    assert (out.shape, out.dtype, out.weak_type) == (shape, F32, True)
    out = aval(lambda x: lax.full_like(x, 2, shape=shape), sds((1,), U8))
    assert (out.shape, out.dtype, out.weak_type) == (shape, U8, False)


def test_creation_errors():
    with pytest.raises(ValueError, match="iota: dimension 1 out of range"):
        lax.iota_p.bind(dtype=I32, shape=(3,), dimension=1, sharding=None)
    with pytest.raises(TypeError, match=r"scalar fill_value, got float32\[2\]"):
        aval(lambda x: lax.full((2,), x), sds((2,)))
    with pytest.raises(TypeError, match="iota does not accept dtype bool"):
        aval(lambda: lax.iota(bool, 3))
    # complex counts are numbers too (JAX's; jnp.arange of a complex dtype needs them)
    np.testing.assert_array_equal(lax.iota(np.complex64, 3), [0, 1, 2])
    assert lax.iota(np.complex64, 3).dtype == np.complex64
