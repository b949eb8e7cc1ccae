"""Eager dispatch: one compiled executable per (primitive, params, signature, device),
argument conversion, and where results live."""
from __future__ import annotations

import numpy as np
import pytest
from jaxlib.mlir.dialects import stablehlo

import plax
from plax import lax
from plax.extend.config import default_device
from plax.extend.core import Primitive, ShapedArray
from plax_transforms import dispatch


@pytest.fixture
def compiles(monkeypatch):
    """The list of primitives compiled during the test (caches emptied first, so that
    what earlier tests compiled does not count)."""
    plax.clear_caches()
    seen = []
    compile_primitive = dispatch._compile_primitive

    def counting(prim, closed, placement):
        seen.append(prim.name)
        return compile_primitive(prim, closed, placement)

    monkeypatch.setattr(dispatch, "_compile_primitive", counting)
    return seen


def test_numpy_arrays_python_scalars_and_arrays_mix():
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(lax.add(x, 1.5), x + 1.5)
    np.testing.assert_allclose(lax.mul(plax.device_put(x), x), x * x)
    out = lax.add(2.0, 3.0)
    assert out.dtype == np.float32 and out.weak_type and float(out) == 5.0


def test_executables_are_cached_by_signature_and_params(compiles):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + 17  # a shape no other test uses
    lax.sub(x, x)
    lax.sub(x + 1, x)
    lax.sub(plax.device_put(x), x)
    assert compiles == ["sub"]
    lax.sub(x.astype(np.int32), x.astype(np.int32))  # dtype
    lax.sub(x[:1], x[:1])  # shape
    assert compiles == ["sub"] * 3
    lax.reduce_sum(x, (0,))
    lax.reduce_sum(x, (1,))  # parameters
    lax.reduce_sum(x, (1,))
    assert compiles == ["sub"] * 3 + ["reduce_sum"] * 2


def test_weak_type_is_part_of_the_signature(compiles):
    y = np.float32(7.25)
    weak, strong = lax.neg(7.25), lax.neg(y)
    assert weak.weak_type and not strong.weak_type
    assert compiles == ["neg", "neg"]


def test_x64_is_part_of_the_key():
    x = np.arange(3, dtype=np.float64)
    assert lax.neg(x).dtype == np.float32
    with plax.enable_x64(True):
        assert lax.neg(x).dtype == np.float64
    assert lax.neg(x).dtype == np.float32


def test_committed_inputs_decide_the_device():
    device3 = plax.devices()[3]
    x = plax.device_put(np.ones(3, np.float32), device3)
    out = lax.add(x, np.ones(3, np.float32))
    assert out.sharding.device_set == {device3} and out.committed
    elsewhere = plax.device_put(np.ones(3, np.float32))  # uncommitted, on device 0
    moved = lax.add(elsewhere, x)
    assert moved.sharding.device_set == {device3} and moved.committed


def test_uncommitted_inputs_run_on_the_default_device():
    out = lax.add(np.ones(2, np.float32), 1.0)
    assert not out.committed and out.sharding.device_set == {plax.devices()[0]}
    device2 = plax.devices()[2]
    with default_device(device2):
        out = lax.add(np.ones(2, np.float32), 1.0)
    assert not out.committed and out.sharding.device_set == {device2}


def test_conflicting_committed_devices_name_both():
    d3, d4 = plax.devices()[3:5]
    a = plax.device_put(np.ones(2, np.float32), d3)
    b = plax.device_put(np.ones(2, np.float32), d4)
    with pytest.raises(ValueError, match=r"argument 0 and with device ids \[3\].*argument 1 "
                                         r"and with device ids \[4\]"):
        lax.add(a, b)


def test_multiple_results():
    keys = np.array([3, 1, 2], np.int32)
    vals = np.array([30.0, 10.0, 20.0], np.float32)
    k, v = lax.sort_key_val(keys, vals)
    np.testing.assert_array_equal(k, [1, 2, 3])
    np.testing.assert_array_equal(v, [10.0, 20.0, 30.0])


def test_deleted_array_raises():
    x = plax.device_put(np.ones(2, np.float32))
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        lax.neg(x)


def test_unhashable_params_are_compiled_without_caching(compiles):
    prim = Primitive("tests.scale_by_list")
    prim.def_abstract_eval(lambda x, *, factors: x)

    @prim.def_lowering
    def _lower(ctx, x, *, factors):
        from plax.extend.mlir import mu as mlir_util
        return stablehlo.multiply(x, mlir_util.splat(factors[0], ctx.avals_in[0]))

    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(prim.bind(x, factors=[2.0]), 2 * x)
    np.testing.assert_allclose(prim.bind(x, factors=[2.0]), 2 * x)
    assert compiles == ["scale_by_list"] * 2


def test_primitive_without_lowering_fails_clearly():
    prim = Primitive("tests.no_lowering_here")
    prim.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    with pytest.raises(NotImplementedError, match="'tests.no_lowering_here'.*'cpu'"):
        prim.bind(np.ones(2, np.float32))


def test_eager_use_of_a_deleted_array_names_its_position_plainly():
    x = plax.device_put(np.ones(3, np.float32))
    x.delete()
    with pytest.raises(RuntimeError, match=r"Array passed as argument 0 has been deleted"):
        lax.add(x, 1.0)
