"""plax.experimental.custom_partitioning on the 8 virtual CPU devices: XLA's SPMD
partitioner calls the user's partition rule while compiling (counted), the result is
laid out as the rule returned, and the values are the unpartitioned function's;
Shardy rules (strings and SdyShardingRule objects) against JAX's attributes (JAX in
one subprocess); GSPMD's propagation callbacks; bad inputs raise JAX's classes."""
import importlib.util
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.errors import UnexpectedTracerError
from plax.experimental.custom_partitioning import (BATCHING, ArrayMapping, CompoundFactor,
                                                   SdyShardingRule, custom_partitioning)
from plax.extend import config
from plax.sharding import NamedSharding, PartitionSpec as P


def _leading_kept(sharding, ndim):
    """The sharding of `sharding`'s dimensions but the last, which is made whole."""
    spec = tuple(sharding.spec) + (None,) * ndim
    return NamedSharding(sharding.mesh, P(*spec[:ndim - 1], None))


def _rowwise_fft():
    """An FFT over the last axis that keeps the leading axes' sharding (JAX's doc
    example, written afresh); its partition calls are recorded."""
    seen = []

    @custom_partitioning
    def rowwise_fft(x):
        return jnp.fft.fft(x)

    def partition(mesh, arg_shapes, result_shape):
        seen.append((arg_shapes[0].sharding.spec, result_shape.sharding.spec))
        kept = _leading_kept(arg_shapes[0].sharding, len(arg_shapes[0].shape))
        return mesh, jnp.fft.fft, kept, (kept,)

    rowwise_fft.def_partition(partition, sharding_rule="... i -> ... i")
    return rowwise_fft, seen


def test_partition_is_called_and_keeps_the_batch_sharding(mesh):
    fft, seen = _rowwise_fft()
    xv = (np.arange(64).reshape(8, 8) % 7).astype(np.complex64)
    x = plax.device_put(xv, NamedSharding(mesh, P("x", "y")))
    out = plax.jit(fft)(x)
    assert len(seen) == 1  # the partitioner asked once, while compiling
    # it saw the operand's sharding, and the result's as the rule propagates it (and
    # so the output ends, as in JAX: the per-shard result is resharded back to it)
    assert seen[0] == (P("x", "y"), P("x", "y"))
    assert out.sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(out), np.fft.fft(xv), rtol=1e-5, atol=1e-4)
    plax.jit(fft)(x)
    assert len(seen) == 1  # the executable is cached: no second partitioning
    hlo_text = plax.jit(fft).lower(x).compile().as_text()
    assert "all-gather" in hlo_text or "all-to-all" in hlo_text  # the last axis made whole


def test_a_sharded_contraction_psums_inside_the_per_shard_function(mesh):
    seen = []

    @custom_partitioning
    def matmul(a, b):
        return a @ b

    def partition(mesh, arg_shapes, result_shape):
        a_spec, b_spec = (s.sharding.spec for s in arg_shapes)
        seen.append((a_spec, b_spec))
        rows, k = a_spec[0], a_spec[1]

        def per_shard(a, b):
            partial = a @ b
            return lax.psum(partial, k) if k is not None else partial
        return (mesh, per_shard, NamedSharding(mesh, P(rows, None)),
                (NamedSharding(mesh, P(rows, k)), NamedSharding(mesh, P(k, None))))

    matmul.def_partition(partition, sharding_rule="i k, k j -> i j",
                         reduction_factors=("k",))
    av = np.arange(64, dtype=np.float32).reshape(8, 8) / 8
    bv = np.arange(32, dtype=np.float32).reshape(8, 4) / 4
    a = plax.device_put(av, NamedSharding(mesh, P("x", "y")))
    b = plax.device_put(bv, NamedSharding(mesh, P("y", None)))
    out = plax.jit(matmul)(a, b)
    assert seen == [(P("x", "y"), P("y", None))]
    assert out.sharding.spec in (P("x"), P("x", None))
    np.testing.assert_allclose(np.asarray(out), av @ bv, rtol=1e-5)


def test_static_arguments_reach_the_rules_and_the_body(mesh):
    seen = []

    def scale(x, factor):
        return x * factor
    scaled = custom_partitioning(scale, static_argnums=(1,))

    def rule(factor, mesh, operand_types, result_types):
        seen.append(("rule", factor, len(operand_types), len(result_types)))
        return "i j -> i j"

    def partition(factor, mesh, arg_shapes, result_shape):
        seen.append(("partition", factor))
        s = arg_shapes[0].sharding
        return mesh, lambda x: x * factor, s, (s,)

    scaled.def_partition(partition, sharding_rule=rule)
    xv = np.arange(16, dtype=np.float32).reshape(8, 2)
    x = plax.device_put(xv, NamedSharding(mesh, P("x")))
    out = plax.jit(lambda x: scaled(x, factor=3.0))(x)
    np.testing.assert_allclose(np.asarray(out), xv * 3)
    assert seen == [("rule", 3.0, 1, 1), ("partition", 3.0)]
    assert out.sharding.spec in (P("x"), P("x", None))
    # eagerly, and on one device, it is the plain body: no rule is asked
    np.testing.assert_allclose(np.asarray(scaled(xv, 2.0)), xv * 2)
    np.testing.assert_allclose(np.asarray(plax.jit(scaled, static_argnums=1)(xv, 2.0)), xv * 2)
    assert len(seen) == 2
    with pytest.raises(UnexpectedTracerError):
        plax.jit(scaled)(xv, 2.0)


def test_pytree_operands_and_several_results(mesh):
    seen = []

    def both(d):
        return d["a"] + 1, d["a"] * d["b"]

    @custom_partitioning
    def pair(d):
        return both(d)

    def partition(mesh, arg_shapes, result_shape):
        seen.append(([s.sharding.spec for s in arg_shapes[0].values()],
                     [r.sharding.spec for r in result_shape]))
        rows = NamedSharding(mesh, P("x"))
        return mesh, both, (rows, rows), ({"a": rows, "b": rows},)

    pair.def_partition(partition, sharding_rule="i j, i j -> i j, i j")
    av = np.arange(32, dtype=np.float32).reshape(8, 4)
    a = plax.device_put(av, NamedSharding(mesh, P("x", "y")))
    plus, times = plax.jit(pair)({"a": a, "b": av})
    assert seen == [([P("x", "y")] * 2, [P("x", "y")] * 2)]
    assert plus.sharding.spec == times.sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(plus), av + 1)
    np.testing.assert_allclose(np.asarray(times), av * av)
    # in a region manual over every mesh axis there is nothing left to partition
    body = plax.shard_map(lambda x: pair({"a": x, "b": x})[1], mesh=mesh,
                          in_specs=P("x", "y"), out_specs=P("x", "y"))
    np.testing.assert_allclose(np.asarray(plax.jit(body)(a)), av * av)
    assert len(seen) == 1


def test_in_a_shard_map_manual_over_some_axes(mesh):
    """The partitioner lays the call out over the automatic axes ('y') of each group:
    the rules get shardings over those 4 devices (GSPMDShardings, as JAX gives), and a
    psum over 'y' in the per-shard function sums within the group."""
    seen = []
    centered = custom_partitioning(lambda x: x - x.mean(axis=1, keepdims=True))

    def partition(mesh, arg_shapes, result_shape):
        s, (rows, cols) = arg_shapes[0].sharding, arg_shapes[0].shape
        seen.append((len(s.device_set), s.shard_shape((rows, cols))))
        split = s.shard_shape((rows, cols))[1] != cols

        def per_shard(x):
            total = x.sum(axis=1, keepdims=True)
            return x - (lax.psum(total, "y") if split else total) / cols
        return mesh, per_shard, s, (s,)

    centered.def_partition(partition, sharding_rule="i j -> i j")
    body = plax.shard_map(centered, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                          axis_names={"x"})
    xv = np.arange(64, dtype=np.float32).reshape(8, 8) ** 1.5
    out = plax.jit(body)(plax.device_put(xv, NamedSharding(mesh, P("x", "y"))))
    assert seen == [(4, (4, 2))]  # a group's block (4 rows) split 4 ways along 'y'
    assert out.sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(out), xv - xv.mean(1, keepdims=True), rtol=1e-5)


def test_on_an_explicit_mesh_the_rules_see_auto_axes():
    """As in JAX: the partitioner's choices are not types, so the mesh the rules get
    has Auto axes, while the output keeps the program's Explicit type."""
    explicit = plax.make_mesh((4, 2), ("a", "b"))
    seen = []

    @custom_partitioning
    def double(x):
        return 2 * x

    def partition(mesh, arg_shapes, result_shape):
        seen.append((mesh.axis_types, arg_shapes[0].sharding.spec))
        s = arg_shapes[0].sharding
        return mesh, lambda x: 2 * x, s, (s,)

    double.def_partition(partition, sharding_rule="i j -> i j")
    xv = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = plax.jit(double)(plax.device_put(xv, NamedSharding(explicit, P("a"))))
    auto = plax.sharding.AxisType.Auto
    assert seen == [((auto, auto), P("a", None))]
    assert out.sharding.mesh is explicit and out.sharding.spec == P("a", None)
    np.testing.assert_allclose(np.asarray(out), 2 * xv)


def test_gspmd_asks_the_propagation_callbacks(mesh):
    calls = {"infer": 0, "partition": 0}

    @custom_partitioning
    def cos(x):
        return jnp.cos(x)

    def infer(mesh, arg_shapes, result_shape):
        calls["infer"] += 1
        return arg_shapes[0].sharding

    def partition(mesh, arg_shapes, result_shape):
        calls["partition"] += 1
        rows = NamedSharding(mesh, P("x", None))
        return mesh, jnp.cos, rows, (rows,)

    cos.def_partition(partition, infer_sharding_from_operands=infer,
                      propagate_user_sharding=lambda mesh, user: user.sharding)
    xv = np.linspace(0, 1, 32, dtype=np.float32).reshape(8, 4)
    x = plax.device_put(xv, NamedSharding(mesh, P("x", "y")))
    with config.use_shardy_partitioner(False):
        out = plax.jit(cos)(x)
    assert calls["infer"] >= 1 and calls["partition"] == 1
    assert out.sharding.spec == P("x", "y")  # what infer_sharding_from_operands said
    np.testing.assert_allclose(np.asarray(out), np.cos(xv), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="sharding_rule"):
        cos(xv)  # Shardy needs a sharding_rule where GSPMD's callbacks are given


def test_bad_rules_and_calls_raise_jax_classes(mesh):
    @custom_partitioning
    def f(x):
        return jnp.sin(x)

    with pytest.raises(AttributeError):
        f(np.ones(3, np.float32))  # no def_partition yet
    with pytest.raises(ValueError, match="Unknown keyword"):
        f.def_partition(None, sharding_rule=SdyShardingRule((("i",),), (("i",),)), i=3)
    with pytest.raises(ValueError, match="not used in the rule"):
        f.def_partition(None, sharding_rule="i -> i", j=3)

    def wrong_shape(mesh, arg_shapes, result_shape):
        s = arg_shapes[0].sharding
        return mesh, lambda x: jnp.sin(x)[:1], s, (s,)

    def sine_with(rule):  # a fresh function each: jit caches what it traced of one
        g = custom_partitioning(lambda x: jnp.sin(x))
        g.def_partition(wrong_shape, sharding_rule=rule)
        return g

    x = plax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x")))
    with pytest.raises(plax.errors.JaxRuntimeError, match="Mismatch in result shapes"):
        plax.jit(sine_with("i j -> i j"))(x)
    for rule, message in (("i -> i", "rank 1, but the operation 0th operand has rank 2"),
                          ("i j, k -> i j", "2 operands, but the operation has 1")):
        with pytest.raises(ValueError, match=message):
            plax.jit(sine_with(rule)).lower(x)
    with pytest.raises(NotImplementedError, match="Batching rule for 'custom_partitioning'"):
        plax.vmap(sine_with("i -> i"))(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError,
                       match="Differentiation rule for 'custom_partitioning'"):
        plax.jvp(sine_with("i -> i"), (np.ones(3, np.float32),), (np.ones(3, np.float32),))


def test_rule_objects_and_string_errors():
    assert BATCHING == "\u2026"
    assert ArrayMapping(BATCHING, "i", CompoundFactor("j", "k")) == (BATCHING, "i", ("j", "k"))
    with pytest.raises(ValueError, match="at least two"):
        CompoundFactor("a")
    with pytest.raises(ValueError, match="beginning"):
        ArrayMapping("i", BATCHING)
    with pytest.raises(ValueError, match="must specify its size"):
        SdyShardingRule((ArrayMapping(CompoundFactor("a", "b")),), (ArrayMapping("c"),))
    with pytest.raises(ValueError, match="only be in one"):
        SdyShardingRule((("i",),), (("i",),), reduction_factors=("i",),
                        permutation_factors=("i",))

    @custom_partitioning
    def f(x):
        return x

    for rule, message in (("i j", "There is no ->"), ("i (j) -> i", "at least two factors"),
                          ("i ((j k)) -> i", "nested brackets"), (". i -> i", "ellipsis"),
                          ("1i -> i", "start with a letter"), ("i$ -> i", "Unknown character"),
                          ("i ... -> i", "beginning of a dimension")):
        with pytest.raises(ValueError, match=message):
            f.def_partition(None, sharding_rule=rule)
    with pytest.raises(TypeError, match="factor_sizes"):
        f.def_partition(None, sharding_rule="(i j) -> i", j=2.0)


# (rule, keywords, operand shapes, result shapes)
RULE_CASES = [
    ("i j -> i j", {}, [[8, 4]], [[8, 4]]),
    ("... i -> ... i", {}, [[2, 3, 8]], [[2, 3, 8]]),
    ("...0 i, ...1 j -> ...1 i j", {}, [[2, 4], [3, 5]], [[3, 4, 5]]),
    ("i k, k j -> i j", {"reduction_factors": ("k",)}, [[8, 6], [6, 4]], [[8, 4]]),
    ("(a b) c -> a (b c)", {"b": 2, "need_replication_factors": ("c",)}, [[6, 5]],
     [[3, 10]]),
    ("i, i -> i", {"permutation_factors": ("i",)}, [[4], [8]], [[4]]),
    (" -> ", {}, [[]], [[]]),
]

_JAX_RULES = """
    import json, sys
    from jax._src.custom_partitioning_sharding_rule import (
        sdy_sharding_rule_to_mlir, str_to_sdy_sharding_rule)
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    out = []
    with mlir.make_ir_context(), ir.Location.unknown():
        for rule, kw, ins, outs in json.loads(sys.argv[1]):
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
            t = lambda s: ir.RankedTensorType.get(s, ir.F32Type.get())
            attr = sdy_sharding_rule_to_mlir(str_to_sdy_sharding_rule(rule, **kw),
                                             [t(s) for s in ins], [t(s) for s in outs])
            out.append(str(attr))
    print(json.dumps(out))
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_rule_attributes_match_jax():
    from plax.extend.mlir import make_ir_context, ir
    from plax_sharding.sharding_rule_spec import rule_attribute, str_to_sdy_sharding_rule
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_RULES),
                           json.dumps(RULE_CASES)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    with make_ir_context(), ir.Location.unknown():
        mine = [str(rule_attribute(str_to_sdy_sharding_rule(rule, **kw), ins, outs))
                for rule, kw, ins, outs in RULE_CASES]
    assert mine == theirs
