"""plax_runtime._fastpath.arg_signature: the value-dependent part of the jit cache key,
one `(shape, dtype, weak_type)` triple per argument, computed in C++."""
import enum
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from plax.extend.core import ShapedArray
from plax_runtime._fastpath import arg_signature


class HasAval:
    """What a plax Array or tracer looks like to the fast path."""

    def __init__(self, aval):
        self.aval = aval


class Color(enum.IntEnum):
    RED = 1


def sig(shape, dtype, weak=False):
    return (tuple(shape), np.dtype(dtype), weak)


@pytest.mark.parametrize("x64, bits", [(False, 32), (True, 64)])
def test_python_scalars_are_weak_at_the_default_width(x64, bits):
    assert arg_signature([1, 2.5, 1j, Color.RED], x64) == (
        sig((), f"int{bits}", True), sig((), f"float{bits}", True),
        sig((), f"complex{2 * bits}", True), sig((), f"int{bits}", True))


@pytest.mark.parametrize("x64", [False, True])
def test_python_bool_is_not_weak(x64):
    assert arg_signature([True, False], x64) == (sig((), bool), sig((), bool))


def test_numpy_arrays_and_scalars_keep_their_dtype():
    args = [np.zeros((2, 3), np.float32), np.arange(4, dtype=np.int64), np.float64(1.0),
            np.zeros((0, 5), np.complex128), np.bool_(True)]
    assert arg_signature(args, False) == (
        sig((2, 3), np.float32), sig((4,), np.int64), sig((), np.float64),
        sig((0, 5), np.complex128), sig((), np.bool_))


def test_aval_is_read_before_shape_and_dtype():
    class Traced(HasAval):
        shape, dtype = (9,), np.dtype(np.int8)  # must be ignored: the aval decides

    args = [Traced(ShapedArray((2,), np.float32, weak_type=True)),
            HasAval(ShapedArray((), np.int32))]
    assert arg_signature(args, False) == (sig((2,), np.float32, True), sig((), np.int32))


def test_aval_fields_are_read_generically():
    class Aval:  # any object with the three fields, e.g. a list shape and a truthy flag
        shape, dtype, weak_type = [3, 1], np.dtype(np.uint8), np.bool_(True)

    ((shape, dtype, weak),) = arg_signature([HasAval(Aval())], False)
    assert (shape, dtype, weak) == ((3, 1), np.dtype(np.uint8), True)
    assert type(shape) is tuple and type(weak) is bool


def test_signatures_are_hashable_keys():
    def make():
        return arg_signature((np.ones((2, 2), np.float32), 3, HasAval(ShapedArray((1,), "i4"))),
                             False)

    cache = {make(): "hit"}
    assert cache[make()] == "hit"
    assert make() != arg_signature((np.ones((2, 2), np.float32), 3.0,
                                    HasAval(ShapedArray((1,), "i4"))), False)


def test_accepts_any_sequence():
    assert arg_signature((), False) == ()
    assert arg_signature([], True) == ()
    assert arg_signature((x for x in [1.0]), False) == (sig((), np.float32, True),)


@pytest.mark.parametrize("bad, position", [(["a"], 0), ([1, None], 1),
                                           ([np.ones(2), object()], 1)])
def test_rejects_values_that_are_not_arrays(bad, position):
    name = type(bad[position]).__name__
    with pytest.raises(TypeError, match=rf"Argument {position} of type <class '\w*\.?{name}'> "
                                        "is not a valid JAX type"):
        arg_signature(bad, False)


def test_rejects_an_aval_without_its_fields():
    with pytest.raises(TypeError, match=r"Argument 0 has an aval of type <class 'int'> that "
                                        r"lacks \.shape, \.dtype or \.weak_type"):
        arg_signature([HasAval(3)], False)


def test_rejects_arguments_that_are_not_a_sequence():
    with pytest.raises(TypeError, match="args must be a sequence"):
        arg_signature(3, False)
    with pytest.raises(TypeError):
        arg_signature([1], 1)  # x64 must be a bool


def test_errors_raised_by_attributes_propagate():
    class Broken:
        @property
        def aval(self):
            raise ValueError("deleted array")

    with pytest.raises(ValueError, match="deleted array"):
        arg_signature([Broken()], False)


def test_keeps_no_references():
    dtype = np.dtype([("a", np.float32), ("b", np.int8)])  # a fresh, non-shared object
    aval = ShapedArray((2,), dtype)
    arg = HasAval(aval)
    before = sys.getrefcount(aval.dtype), sys.getrefcount(aval.shape), sys.getrefcount(arg)
    for _ in range(1000):
        arg_signature([arg], False)
    with pytest.raises(TypeError):
        arg_signature([arg, "bad"], False)
    assert (sys.getrefcount(aval.dtype), sys.getrefcount(aval.shape),
            sys.getrefcount(arg)) == before


@given(hnp.arrays(dtype=hnp.scalar_dtypes(),
                  shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)),
       st.booleans())
def test_array_signature_is_shape_dtype_and_not_weak(x, x64):
    assert arg_signature([x], x64) == ((x.shape, x.dtype, False),)


class _PropertyImpl:
    """Has every name the Arrays' slots have, but `_impl` is a property."""
    __slots__ = ("_aval", "_sharding", "_npy_value", "_sig")
    _impl = property(lambda self: None, lambda self, value: None)


class _NoSlots:
    pass


@pytest.mark.parametrize("cls", [_PropertyImpl, _NoSlots])
def test_set_array_type_takes_only_classes_with_the_arrays_object_slots(cls):
    """The executor reads and writes an Array's slots in place, by offset: a class
    whose names are not writable `__slots__` entries is refused (and the Array class
    in use stays), so no foreign object is ever read that way."""
    import plax
    from plax_runtime import _fastpath
    with pytest.raises(TypeError, match="set_array_type"):
        _fastpath.set_array_type(cls)
    f = plax.jit(lambda x: x * 2)
    np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), [2, 2, 2])
