"""plax.export with shardings that are not NamedShardings (GSPMDSharding,
SingleDeviceSharding), converted as JAX 0.10.2 converts them, and exports in JAX's
format before 2026, whose shardings are HloSharding protos; checked against JAX in a
subprocess where it is installed."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jaxlib import xla_client as xc

import plax
from plax import export
from plax.sharding import GSPMDSharding, NamedSharding, PartitionSpec as P, SingleDeviceSharding
from plax_transforms.export import flatbuffer as fb, serialization

requires_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("flatbuffers") is None,
    reason="JAX (with flatbuffers, which jax.export's serialization needs) is not installed")

f32 = np.float32
_TILED = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"


def _gspmd(text):
    return GSPMDSharding(plax.devices(), xc.HloSharding.from_string(text))


def _double(ins, outs):
    fn = plax.jit(lambda a: a * 2, in_shardings=ins, out_shardings=outs)
    return export.export(fn)(plax.ShapeDtypeStruct((8, 4), f32))


def _a():
    return np.arange(32, dtype=f32).reshape(8, 4)


@pytest.fixture(scope="module")
def gspmd_exp():
    return _double(_gspmd(_TILED), _gspmd(_TILED))


def test_gspmd_and_single_device_shardings_become_named(gspmd_exp):
    # The NamedShardings JAX 0.10.2 records for the same jit shardings.
    axes = plax.sharding.AbstractMesh((4, 2), ("_axis_0", "_axis_1"),
                                      (plax.sharding.AxisType.Auto,) * 2)
    tiled = NamedSharding(axes, P("_axis_0"))
    empty = plax.sharding.AbstractMesh((), ())
    assert gspmd_exp._in_named_shardings == gspmd_exp._out_named_shardings == (tiled,)
    assert gspmd_exp.nr_devices == 8
    replicated = _double(_gspmd("{replicated}"), None)
    assert replicated._in_named_shardings == (NamedSharding(empty, P(None, None)),)
    single = _double(SingleDeviceSharding(plax.devices()[0]),
                     SingleDeviceSharding(plax.devices()[0]))
    assert single.nr_devices == 1
    assert single._in_named_shardings == (NamedSharding(empty, P(None, None)),)
    # Beside a NamedSharding, a GSPMDSharding takes that sharding's mesh.
    mesh = plax.make_mesh((4, 2), ("x", "y"))
    mixed = _double(NamedSharding(mesh, P("x")), _gspmd(_TILED))
    assert mixed._out_named_shardings == (NamedSharding(mesh.abstract_mesh, P("x")),)
    with pytest.raises(TypeError, match="Cannot convert GSPMDSharding"):
        _double(_gspmd("{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"), None)
    a = plax.device_put(_a(), _gspmd(_TILED))
    out = gspmd_exp.call(a)
    np.testing.assert_allclose(np.asarray(out), 2 * _a())
    assert str(out.sharding._to_xla_hlo_sharding(2)) == _TILED
    back = export.deserialize(gspmd_exp.serialize())
    assert back._in_named_shardings == (tiled,)


def _old_format(exp) -> bytes:
    """`exp` serialized as JAX wrote sharded exports before 2026: each input's and
    output's sharding an HloSharding proto, no named shardings."""
    table = serialization._exported_table(exp, 0)
    for slot, named, avals in ((serialization._EXP_IN_SHARDINGS, exp.in_named_shardings,
                                exp.in_avals),
                               (serialization._EXP_OUT_SHARDINGS, exp.out_named_shardings,
                                exp.out_avals)):
        entries = [fb.Table({}) if s is None else fb.Table({
            0: (fb.INT8, 1),  # ShardingKind.hlo_sharding
            1: (None, s._to_xla_hlo_sharding(len(a.shape)).to_proto().SerializeToString())})
            for s, a in zip(named, avals)]
        table.fields[slot] = (None, fb.Vector(entries))
    for slot in (serialization._EXP_UNIQUE_MESHES, serialization._EXP_UNIQUE_SHARDINGS,
                 serialization._EXP_IN_SHARDINGS_IDXS, serialization._EXP_OUT_SHARDINGS_IDXS):
        table.fields.pop(slot, None)
    return fb.build(table)


@pytest.fixture(scope="module")
def old_blob():
    mesh = plax.make_mesh((4, 2), ("x", "y"))
    fn = plax.jit(lambda a, b: (a * 2, a.sum(0) + b),
                  in_shardings=(NamedSharding(mesh, P("x", None)), None),
                  out_shardings=(NamedSharding(mesh, P(None, "y")), None))
    return _old_format(export.export(fn)(plax.ShapeDtypeStruct((8, 4), f32),
                                         plax.ShapeDtypeStruct((4,), f32)))


def test_exports_with_hlo_sharding_protos_deserialize_and_run(old_blob):
    old = export.deserialize(old_blob)
    assert old._in_named_shardings == old._out_named_shardings == ()
    assert [str(s) for s in old.in_shardings_hlo] == [_TILED, "None"]
    assert str(old.out_shardings_hlo[0]) == \
        "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"
    mesh = plax.make_mesh((4, 2), ("x", "y"))
    assert old.in_shardings_jax(mesh) == (NamedSharding(mesh, P("x", None)), None)
    assert old.out_shardings_jax(mesh)[0] == NamedSharding(mesh, P(None, "y"))
    a = plax.device_put(_a(), old.in_shardings_jax(mesh)[0])
    doubled, summed = old.call(a, np.ones(4, f32))
    np.testing.assert_allclose(np.asarray(doubled), 2 * _a())
    np.testing.assert_allclose(np.asarray(summed), _a().sum(0) + 1)
    assert doubled.sharding == NamedSharding(mesh, P(None, "y"))  # as in JAX


_JAX_READS = """
    import json, sys, pathlib
    import numpy as np
    import jax
    from jax import export
    from jax.sharding import NamedSharding, PartitionSpec as P
    tmp = pathlib.Path(sys.argv[1])
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    old = export.deserialize(bytearray((tmp / "old.bin").read_bytes()))
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    arg = jax.device_put(a, old.in_shardings_jax(mesh)[0])
    doubled, summed = old.call(arg, np.ones(4, np.float32))
    gspmd = export.deserialize(bytearray((tmp / "gspmd.bin").read_bytes()))
    axes = jax.make_mesh((4, 2), ("_axis_0", "_axis_1"),
                         axis_types=(jax.sharding.AxisType.Auto,) * 2)
    out = gspmd.call(jax.device_put(a, gspmd.in_shardings_jax(axes)[0]))
    print(json.dumps({
        "old_hlo": [str(s) for s in (*old.in_shardings_hlo, *old.out_shardings_hlo)],
        "old_named": [str(s) for s in old._in_named_shardings],
        "old_in_spec": str(old.in_shardings_jax(mesh)[0].spec),
        "old_results": [np.asarray(doubled).tolist(), np.asarray(summed).tolist()],
        "old_result_sharding": str(doubled.sharding),
        "gspmd_named": [str(s.spec) for s in gspmd._in_named_shardings],
        "gspmd_result": np.asarray(out).tolist(),
    }))
"""


@requires_jax
def test_jax_reads_both_forms(tmp_path, old_blob, gspmd_exp):
    (tmp_path / "old.bin").write_bytes(old_blob)
    (tmp_path / "gspmd.bin").write_bytes(gspmd_exp.serialize())
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_READS), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["old_hlo"] == [_TILED, "None",
                              "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", "None"]
    assert got["old_named"] == ["None", "None"] and got["old_in_spec"] == "P('x',)"
    assert got["old_result_sharding"].endswith("spec=P(None, 'y'), memory_kind=device)")
    np.testing.assert_allclose(got["old_results"][0], 2 * _a())
    np.testing.assert_allclose(got["old_results"][1], _a().sum(0) + 1)
    assert got["gspmd_named"] == ["P('_axis_0',)"]
    np.testing.assert_allclose(got["gspmd_result"], 2 * _a())
