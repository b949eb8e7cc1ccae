"""compile/execute of hand-written StableHLO modules."""
import numpy as np
import pytest
from jaxlib import xla_client as xc

from plax.extend.core import ShapedArray
from plax_runtime import api, executable
from plax_runtime.device_put import device_put
from plax_runtime.sharding_impls import GSPMDSharding, SingleDeviceSharding

DOUBLE = """
func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""

DOUBLE_DONATED = DOUBLE.replace("%arg0: tensor<3xf32>)",
                                "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32})")

TWO_OUTPUTS = """
func.func public @main(%arg0: tensor<2x3xi32>, %arg1: tensor<i32>)
    -> (tensor<2x3xi32>, tensor<3xi32>) {
  %b = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<2x3xi32>
  %0 = stablehlo.multiply %arg0, %b : tensor<2x3xi32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across dimensions = [0]
      : (tensor<2x3xi32>, tensor<i32>) -> tensor<3xi32>
  return %0, %1 : tensor<2x3xi32>, tensor<3xi32>
}
"""

SPMD_SUM = """
module @spmd attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
func.func public @main(%arg0: tensor<8x2xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"})
    -> (tensor<8x2xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, tensor<2xf32>) {
  %0 = stablehlo.multiply %arg0, %arg0 : tensor<8x2xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.add across dimensions = [0]
      : (tensor<8x2xf32>, tensor<f32>) -> tensor<2xf32>
  return %0, %1 : tensor<8x2xf32>, tensor<2xf32>
}
}
"""


@pytest.fixture(scope="module")
def devs():
    return api.devices()


def test_compile_and_execute(devs):
    exe = executable.compile(DOUBLE, [devs[0]])
    assert exe.devices == (devs[0],)
    assert exe.out_avals == (ShapedArray((3,), np.float32),)
    assert exe.in_shardings == (SingleDeviceSharding(devs[0]),)
    x = device_put(np.array([1.0, 2.0, 3.5], np.float32))
    (out,) = exe.execute([x])
    assert out.aval == ShapedArray((3,), np.float32)
    assert out.sharding == SingleDeviceSharding(devs[0]) and not out.committed
    np.testing.assert_array_equal(np.asarray(out), [2.0, 4.0, 7.0])
    assert not x.is_deleted()
    (again,) = exe.execute([out])
    np.testing.assert_array_equal(np.asarray(again), [4.0, 8.0, 14.0])


def test_executable_cache(devs):
    exe = executable.compile(DOUBLE, [devs[1]])
    assert executable.compile(DOUBLE, [devs[1]]) is exe
    assert executable.compile(DOUBLE.encode(), [devs[1]]) is not exe
    assert executable.compile(DOUBLE, [devs[2]]) is not exe
    assert executable.compile(DOUBLE, [devs[1]], donated_args=(0,)) is not exe


def test_ir_module_input(devs):
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import stablehlo
    with ir.Context() as ctx:
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx.append_dialect_registry(registry)
        stablehlo.register_dialect(ctx)
        module = ir.Module.parse(DOUBLE)
        exe = executable.compile(module, [devs[0]])
    (out,) = exe.execute([device_put(np.ones(3, np.float32))])
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


def test_several_outputs_and_given_avals(devs):
    weak = ShapedArray((3,), np.int32, weak_type=True)
    exe = executable.compile(TWO_OUTPUTS, [devs[2]],
                             out_avals=[ShapedArray((2, 3), np.int32), weak])
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    prod, total = exe.execute([device_put(x, devs[2]), device_put(np.int32(3), devs[2])])
    assert prod.committed and total.aval is weak
    np.testing.assert_array_equal(np.asarray(prod), 3 * x)
    np.testing.assert_array_equal(np.asarray(total), x.sum(0))


def test_host_values_and_uncommitted_arrays_are_moved(devs):
    exe = executable.compile(DOUBLE, [devs[3]])
    (a,) = exe.execute([np.array([1.0, 1.0, 1.0], np.float32)])
    (b,) = exe.execute([device_put(np.ones(3, np.float32))])  # uncommitted on device 0
    assert a.devices() == b.devices() == {devs[3]}
    np.testing.assert_array_equal(np.asarray(b), [2.0, 2.0, 2.0])


def test_committed_argument_on_other_device_is_an_error(devs):
    exe = executable.compile(DOUBLE, [devs[3]], arg_names=["x"])
    x = device_put(np.ones(3, np.float32), devs[4])
    with pytest.raises(ValueError, match=r"argument 0 \(x\) is committed to devices \[4\].*"
                                         r"runs on devices \[3\]"):
        exe.execute([x])


def test_deleted_argument_is_named(devs):
    exe = executable.compile(DOUBLE, [devs[0]])
    x = device_put(np.ones(3, np.float32))
    x.delete()
    with pytest.raises(RuntimeError, match=r"argument 0 has been deleted \(shape=f32\[3\]\)"):
        exe.execute([x])
    with pytest.raises(TypeError, match="takes 1 arguments, got 2"):
        exe.execute([x, x])


@pytest.mark.parametrize("module", [DOUBLE_DONATED, DOUBLE], ids=["aliased", "not-aliased"])
def test_donated_inputs_are_deleted(devs, module):
    exe = executable.compile(module, [devs[0]], donated_args=(0,))
    x = device_put(np.ones(3, np.float32))
    (out,) = exe.execute([x])
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="has been deleted"):
        exe.execute([x])


def test_spmd_executable_on_four_devices(devs):
    exe = executable.compile(SPMD_SUM, devs[4:8])
    rows = exe.in_shardings[0]
    assert isinstance(rows, GSPMDSharding) and rows.device_set == set(devs[4:8])
    assert not rows.is_fully_replicated
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    squared, total = exe.execute([device_put(x)])  # moved and sharded on the way
    assert squared.committed and squared.sharding.is_equivalent_to(rows, 2)
    assert [s.data.shape for s in squared.addressable_shards] == [(2, 2)] * 4
    np.testing.assert_array_equal(np.asarray(squared), x * x)
    np.testing.assert_array_equal(np.asarray(total), x.sum(0))
    assert total.is_fully_replicated and total.devices() == set(devs[4:8])
    # Each shard really lives on the device it reports: XLA checks that on execution.
    negate = """func.func public @main(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %0 = stablehlo.negate %a : tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    }"""
    for shard in squared.addressable_shards:
        (neg,) = executable.compile(negate, [shard.device]).execute([shard.data])
        np.testing.assert_array_equal(np.asarray(neg), -(x * x)[shard.index])
    # An argument already in the expected layout is used as it is.
    placed = device_put(x, rows)
    squared2, _ = exe.execute([placed])
    np.testing.assert_array_equal(np.asarray(squared2), x * x)


def test_text_and_analyses(devs):
    exe = executable.compile(DOUBLE, [devs[0]])
    text = exe.as_text()
    assert text.startswith("HloModule") and "add" in text
    costs = exe.cost_analysis()
    assert costs["flops"] == 3.0
    assert exe.memory_analysis().argument_size_in_bytes == 12


def test_compile_argument_errors(devs):
    with pytest.raises(ValueError, match="2 devices cannot run num_replicas=1 x num_partitions=4"):
        executable.compile(DOUBLE, devs[:2], num_partitions=4)
    with pytest.raises(TypeError, match="non-empty sequence of devices"):
        executable.compile(DOUBLE, [])
    with pytest.raises(TypeError, match="StableHLO text, bytecode or an ir.Module"):
        executable.compile(42, [devs[0]])
    with pytest.raises(ValueError, match="no option 'bogus'"):
        executable.compile(DOUBLE, [devs[0]], build_options={"bogus": 1})
    with pytest.raises(ValueError, match="donated_args \\[3\\] out of range"):
        executable.compile(DOUBLE, [devs[0]], donated_args=(3,))
    with pytest.raises(ValueError, match="2 in_shardings given for 1 arguments"):
        executable.compile(DOUBLE, [devs[0]], in_shardings=[SingleDeviceSharding(devs[0])] * 2)


def test_compile_options_overrides_reach_xla(devs):
    exe = executable.compile(DOUBLE, [devs[0]],
                             compile_options_overrides={"xla_cpu_enable_fast_math": True})
    (out,) = exe.execute([device_put(np.ones(3, np.float32))])
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])
    with pytest.raises(Exception, match="no_such_xla_option"):
        executable.compile(DOUBLE, [devs[0]],
                           compile_options_overrides={"no_such_xla_option": 1})


def test_malformed_module_error_is_reported(devs):
    with pytest.raises(Exception, match="expected|unknown|error"):
        executable.compile("func.func @main( {", [devs[0]])


def test_replicated_executable_needs_metadata(devs):
    with pytest.raises(ValueError, match="num_replicas > 1 need in_shardings"):
        executable.compile(DOUBLE, devs[:2], num_replicas=2)


def test_hlo_sharding_of_outputs_is_xla_reported(devs):
    exe = executable.compile(SPMD_SUM, devs[4:8])
    assert exe.out_shardings[0]._to_xla_hlo_sharding(2) == xc.HloSharding.iota_tile([4, 1])
