"""Pallas kernels compiled for TPU ahead of time, on a host with no TPU (libtpu
installed): each kernel of the corpus (tests/pallas_tpu_kernels.py) is lowered to a
Mosaic `tpu_custom_call` for one device of a v5e:2x2 topology and compiled by libtpu,
and its Mosaic module is compared with the one JAX 0.10.2 makes for the same kernel
(JAX in one shared subprocess): the same histogram of operations, after both modules
are deserialized and put through MLIR's canonicalize and cse passes (so that equal
programs spelled with a constant more or less compare equal). Every difference is
listed in `DIFFERENCES` with its reason. The values are interpret mode's, checked
here against NumPy; running the compiled kernels needs the chip
(benchmarks/tpu/pallas_on_chip.py).
"""
from __future__ import annotations

import base64
import collections
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.experimental import pallas as pl
from plax.experimental.pallas import tpu as pltpu
from tests.jax_reference import requires_jax, run_reference

import pallas_tpu_kernels as kernels

pytestmark = pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                                reason="libtpu is not installed")

CORPUS = kernels.corpus(plax)


def _trace_scopes(n: int) -> dict:
    """JAX's `n` tpu.trace_start/stop pairs (one per phase of its pipeline)."""
    return {"tpu.trace_start": (n, 0), "tpu.trace_stop": (n, 0)}


# Where plax's Mosaic module differs from JAX's: {kernel: {op: (JAX's count, plax's)}}.
DIFFERENCES = {
    # -x: plax emits arith.negf, JAX 0 - x (arith.subf). negf keeps the sign of a
    # zero (-(+0.0) is -0.0, as lax.neg is everywhere else); 0 - (+0.0) is +0.0.
    "fused_where_exp": {"arith.negf": (0, 1), "arith.subf": (1, 0)},
    # The same -x, and JAX's zero for its 0 - x.
    "roll_repeat_masked_store": {"arith.constant": (11, 10), "arith.negf": (0, 1),
                                 "arith.subf": (1, 0)},
    # JAX 0.10.2 reshapes the operand where the broadcast permutes its dimensions
    # (wrong values); plax transposes it first.
    "permuting_broadcast": {"tpu.transpose": (0, 1), "vector.shape_cast": (1, 0)},
    # emit_pipeline: the same buffers, copies, waits, branches and loop as JAX's (every
    # memref.alloca, tpu.sem_alloc, enqueue_dma, wait_dma2, memref_slice, scf.if and
    # scf.for count is equal); the scalar bookkeeping differs. JAX keeps a counter per
    # operand and takes it modulo the buffer count (remui), evaluates the index maps once
    # per phase (memref.load from SMEM), and marks each phase with tpu.trace_start/stop;
    # plax keeps a slot (0 or 1) per operand and evaluates the index maps at the previous,
    # current and next step once. JAX also shortens a pl.BoundedSlice block that would
    # run past the array's end to the end, rounded up to whole tiles (divsi, muli,
    # assume_multiple); plax copies the index map's size as it is.
    "emit_pipeline_matmul": {
        "arith.addi": (9, 6), "arith.andi": (3, 7), "arith.cmpi": (20, 16),
        "arith.constant": (10, 9), "arith.muli": (14, 12), "arith.ori": (11, 9),
        "arith.remui": (9, 0), "arith.select": (20, 13), **_trace_scopes(9)},
    # single-buffered x and output (pl.Buffered(1)): the same buffers, semaphores and
    # copies as JAX's (the output's copy a synchronous one in a region of its own); JAX
    # also keeps an empty branch where a double-buffered output would wait (scf.if)
    "emit_pipeline_single_buffered": {
        "arith.addi": (9, 6), "arith.andi": (3, 5), "arith.cmpi": (18, 16),
        "arith.constant": (10, 9), "arith.ori": (12, 7), "arith.remui": (3, 0),
        "arith.select": (16, 11), "arith.subi": (3, 2), "scf.if": (7, 6), "scf.yield": (8, 7),
        **_trace_scopes(9)},
    "emit_pipeline_core_axis": {
        "arith.addi": (11, 6), "arith.cmpi": (9, 8), "arith.remui": (9, 0),
        "arith.select": (9, 5), "arith.subi": (2, 6), **_trace_scopes(9)},
    "emit_pipeline_bounded": {
        "arith.addi": (5, 2), "arith.cmpi": (23, 10), "arith.constant": (10, 8),
        "arith.divsi": (6, 0), "arith.index_cast": (6, 5), "arith.muli": (6, 0),
        "arith.ori": (8, 4), "arith.remui": (6, 0), "arith.select": (13, 4),
        "arith.subi": (24, 9), "memref.load": (32, 10), "tpu.assume_multiple": (6, 0),
        **_trace_scopes(7)},
}


def _bodies(text: str) -> list[str]:
    """The serialized Mosaic modules of a lowered program's `tpu_custom_call`s."""
    found = []
    for m in re.finditer(r'@tpu_custom_call\(.*?backend_config = "((?:[^"\\]|\\.)*)"', text):
        config = json.loads(m.group(1).replace("\\22", '"').replace("\\\\", "\\"))
        found.append(config["custom_call_config"]["body"])
    return found


def _histogram(body: str) -> collections.Counter:
    from jaxlib.mlir import ir, passmanager
    from jaxlib.mosaic.python import tpu

    from plax.extend.mlir import make_ir_context
    context = make_ir_context()
    tpu.register_dialect(context)
    context.allow_unregistered_dialects = True
    counts: collections.Counter = collections.Counter()
    with context:
        module = ir.Module.parse(base64.b64decode(body))
        passmanager.PassManager.parse("builtin.module(mosaic-serde{serialize=false},"
                                      "canonicalize,cse)").run(module.operation)

        def count(op):
            counts[op.name] += 1
            return ir.WalkResult.ADVANCE
        module.operation.walk(count)
    del counts["builtin.module"]
    return counts


@pytest.fixture(scope="module")
def device():
    from plax.experimental import topologies
    topology = topologies.get_topology_desc("v5e:2x2", "tpu")
    return plax.sharding.SingleDeviceSharding(topology.devices[0])


def _lowered(fn, shapes, sharding):
    args = [plax.ShapeDtypeStruct(s, jnp.dtype(d), sharding=sharding) for s, d in shapes]
    return plax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))


@pytest.fixture(scope="module")
def plax_modules(device) -> dict:
    """Each kernel's Mosaic modules, after compiling it for TPU."""
    modules = {}
    for name, (fn, shapes) in CORPUS.items():
        lowered = _lowered(fn, shapes, device)
        lowered.compile()  # libtpu runs Mosaic's passes: a bad module fails here
        modules[name] = _bodies(lowered.as_text())
    return modules


@pytest.fixture(scope="module")
def jax_modules() -> dict:
    return run_reference(f"""
        import os, sys
        os.environ["ALLOW_MULTIPLE_LIBTPU_LOAD"] = "1"  # the test process holds libtpu too
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from jax.experimental import topologies
        import pallas_tpu_kernels as kernels, re, json
        topology = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2")
        # JAX's emit_pipeline reads the TPU's generation from the default device
        jax.config.update("jax_default_device", topology.devices[0])
        s = jax.sharding.SingleDeviceSharding(topology.devices[0])
        result = {{}}
        for name, (fn, shapes) in kernels.corpus(jax).items():
            args = [jax.ShapeDtypeStruct(sh, jnp.dtype(d), sharding=s) for sh, d in shapes]
            text = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",)).as_text()
            result[name] = [json.loads(m.group(1).replace("\\\\22", '"').replace(
                "\\\\\\\\", "\\\\"))["custom_call_config"]["body"] for m in re.finditer(
                r'@tpu_custom_call\\(.*?backend_config = "((?:[^"\\\\]|\\\\.)*)"', text)]
    """)


@pytest.mark.parametrize("name", list(CORPUS))
def test_kernel_compiles_for_tpu(plax_modules, name):
    assert len(plax_modules[name]) == 1


@requires_jax
@pytest.mark.parametrize("name", list(CORPUS))
def test_mosaic_module_matches_jax(plax_modules, jax_modules, name):
    (ours,), (theirs,) = plax_modules[name], jax_modules[name]
    ours, theirs = _histogram(ours), _histogram(theirs)
    differences = {op: (theirs[op], ours[op]) for op in sorted(set(ours) | set(theirs))
                   if ours[op] != theirs[op]}
    assert differences == DIFFERENCES.get(name, {}), f"(JAX, plax) counts: {differences}"


# --- the values: interpret mode against NumPy -------------------------------------------------

def _f32(x):
    return np.asarray(x, np.float32)


def _attention(q, k, v):
    q, k, v = (np.asarray(a, np.float32) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b


def _fused(x):
    y = np.where(x > 0, np.exp(-x), np.tanh(x) * 0.5)
    return np.where(np.arange(x.shape[1]) < 64, y, np.log(np.abs(x) + 1))


def _loop_rows(x):
    out, total = np.empty_like(x), np.float32(0)
    for i in range(0, x.shape[0], 8):
        out[i:i + 8] = x[i:i + 8] * 2 + total
        total = total + x[i:i + 8].max()
    return out


def _gather(idx, scale, x):
    return np.concatenate([x[8 * j:8 * j + 8] * s + j for j, s in zip(idx, scale)])


def _shifts(x):
    rolled = np.roll(x, 3, 1) + np.roll(x, 1, 0)
    odd = (np.arange(8) % 2 == 1)[:, None]
    return np.where(odd, np.concatenate([rolled, -rolled], 1),
                    np.concatenate([rolled, rolled], 1) * 2)


NUMPY = {
    "add_2d_grid": lambda x, y: x + y,
    "matmul_f32": lambda x, y: _f32(x) @ _f32(y),
    "matmul_bf16_scratch": lambda x, y: _f32(x) @ _f32(y),
    "softmax_rows": _softmax,
    "layer_norm": _layer_norm,
    "single_buffered_weights": _layer_norm,
    "sum_when_last": lambda x: x.sum(0, keepdims=True),
    "scalar_prefetch": _gather,
    "flash_attention": _attention,
    "fused_where_exp": _fused,
    "fori_loop_rows": _loop_rows,
    "cond_with_results": lambda x: np.concatenate([x[:8] * 2, np.maximum(x[8:], 0)]),
    "int32_ops": lambda x: np.where(x % 3 == 0, x * 3, np.maximum(x, 7)) + (x > 5),
    "strided_loads": lambda x: x[::2] + x[1::2],
    "double_buffered_copy": lambda x: x.reshape(-1, 8, 128).sum(0),
    "roll_repeat_masked_store": _shifts,
    "permuting_broadcast": lambda x: np.broadcast_to(x.T, (2, *x.T.shape)),
    "add_under_jit": lambda x, y: x * 2 + y - 1,
    "add_under_vmap": lambda x, y: x + y,
    "matmul_under_vmap": lambda x, y: _f32(x) @ _f32(y),
    "run_scoped_buffers": lambda x: x * 2 + 3,
    "sync_copy_row": lambda x: x[:1] + 1,
    "emit_pipeline_matmul": lambda x, y: x @ y,
    "emit_pipeline_single_buffered": lambda x, y: x @ y,
    "emit_pipeline_core_axis": lambda x, y: x * y,
    "emit_pipeline_bounded": lambda x, slices: x,
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_interpret_mode_values(name):
    args = kernels.arguments(name, CORPUS[name][1], np.random.default_rng(0))
    kernels.INTERPRET[0] = True
    try:
        fn = kernels.corpus(plax)[name][0]
        got = np.asarray(fn(*args), np.float32)
    finally:
        kernels.INTERPRET[0] = False
    low_precision = any(d == "bfloat16" for _, d in CORPUS[name][1])
    np.testing.assert_allclose(got, np.asarray(NUMPY[name](*args), np.float32),
                               rtol=3e-2 if low_precision else 1e-4,
                               atol=3e-2 if low_precision else 1e-4)


# --- what the lowering refuses, and where it is registered ---------------------------------

def test_unsupported_primitive_names_itself_and_the_kernel_line(device):
    def kernel(x_ref, o_ref):
        o_ref[...] = lax.cumsum(x_ref[...], axis=1)  # the line named

    call = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((8, 128), jnp.float32))
    with pytest.raises(NotImplementedError,
                       match=r"'cumsum' is not supported.*test_pallas_tpu_aot\.py:\d+"):
        _lowered(call, [((8, 128), "float32")], device)


@pytest.mark.parametrize("scoped, message", [
    (lambda body: pl.run_scoped(body, pl.ANY((8, 128), jnp.float32)),
     "run_scoped buffer in memory space any"),
    (lambda body: pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32), collective_axes="x"),
     "run_scoped over collective_axes"),
])
def test_run_scoped_buffers_mosaic_cannot_allocate(device, scoped, message):
    def kernel(x_ref, o_ref):
        def body(tmp_ref):
            tmp_ref[...] = x_ref[...]
            o_ref[...] = tmp_ref[...]
        scoped(body)

    call = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((8, 128), jnp.float32))
    with pytest.raises(NotImplementedError, match=message):
        _lowered(call, [((8, 128), "float32")], device)


def test_boolean_operands_are_refused_clearly(device):
    call = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...]),
                          out_shape=plax.ShapeDtypeStruct((8, 128), jnp.bool_))
    with pytest.raises(NotImplementedError, match="boolean operands"):
        _lowered(call, [((8, 128), "bool")], device)


def test_bad_dimension_semantics_is_a_value_error(device):
    call = pl.pallas_call(
        lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...]), grid=(2,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        out_shape=plax.ShapeDtypeStruct((16, 128), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("sideways",)))
    with pytest.raises(ValueError, match="dimension_semantics entries are one of"):
        _lowered(call, [((16, 128), "float32")], device)


def _row_blocks(mode):
    rows = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(
        lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + 1), grid=(2,),
        in_specs=[rows], out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=mode),
        out_shape=plax.ShapeDtypeStruct((16, 128), jnp.float32))


def test_pipeline_modes_reach_the_windows(device):
    modes = {"synchronous": pl.Buffered(1), "double_buffered": pl.Buffered(2)}
    for kind, mode in modes.items():
        lowered = _lowered(_row_blocks(mode), [((16, 128), "float32")], device)
        lowered.compile()  # libtpu accepts the window's mode
        text = base64.b64decode(_bodies(lowered.as_text())[0])
        assert f"pipeline_mode<{kind}>".encode() in text, kind
    revisited = _row_blocks(pl.Buffered(1, revisit=pl.RevisitMode.ANY))
    _lowered(revisited, [((16, 128), "float32")], device).compile()


@pytest.mark.parametrize("mode, message", [
    (pl.Buffered(3), r"single \(1\) or double \(2\) buffered"),
    (pl.Buffered(2, use_lookahead=True), "use_lookahead"),
    (pl.Buffered(2, revisit=pl.RevisitMode.ANY), "RevisitMode.ANY needs a single"),
    ("double", "unsupported pipeline mode 'double'"),
])
def test_bad_pipeline_modes_are_refused(device, mode, message):
    with pytest.raises(NotImplementedError, match=message):  # the lowering's LoweringError
        _lowered(_row_blocks(mode), [((16, 128), "float32")], device)


def test_vmem_limit_reaches_the_backend_config(device):
    fn, shapes = CORPUS["int32_ops"]
    text = _lowered(fn, shapes, device).as_text()
    assert '\\22scoped_memory_configs\\22:[{\\22memory_space\\22:1,\\22offset\\22:0,' \
           '\\22size\\22:33554432}]' in text


def _mesh_sharding():
    from plax.experimental import topologies
    from plax.sharding import NamedSharding, PartitionSpec as P
    mesh = topologies.make_mesh(topologies.get_topology_desc("v5e:2x2", "tpu"), (4,), ("x",))
    return mesh, NamedSharding(mesh, P("x"))


def test_a_kernel_split_by_the_partitioner_is_refused(device):
    _, sharding = _mesh_sharding()
    fn, _ = CORPUS["add_2d_grid"]
    with pytest.raises(NotImplementedError, match="cannot be automatically partitioned"):
        _lowered(fn, [((64, 256), "float32")] * 2, sharding)


def test_a_kernel_runs_per_device_under_shard_map(device):
    from plax.sharding import PartitionSpec as P
    mesh, sharding = _mesh_sharding()
    fn, _ = CORPUS["add_2d_grid"]
    per_device = plax.shard_map(fn, mesh=mesh, in_specs=(P("x"), P("x")), out_specs=P("x"))
    compiled = _lowered(per_device, [((64, 256), "float32")] * 2, sharding).compile()
    assert "tpu_custom_call" in compiled.as_text()


def test_the_tpu_lowering_is_plax_tpus():
    from plax.extend import rules_of
    rules = rules_of(pl.pallas_call_p)
    assert rules["lowering:tpu"] == "plax-tpu"
    assert rules["lowering"] == "plax-pallas"
