"""plax.sharding: meshes, partition specs, NamedSharding, and sharded Arrays."""
import pickle

import numpy as np
import pytest

import plax
from plax.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec as P,
                           SingleDeviceSharding)


# --- meshes ---------------------------------------------------------------------------

def test_mesh_views(mesh, devs):
    assert mesh.shape == {"x": 2, "y": 4} and mesh.shape_tuple == (("x", 2), ("y", 4))
    assert mesh.axis_names == ("x", "y") and mesh.axis_sizes == (2, 4) and mesh.size == 8
    assert mesh.devices.shape == (2, 4) and list(mesh.devices.flat) == devs
    assert mesh.device_ids.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert mesh.axis_types == (AxisType.Auto, AxisType.Auto)
    assert mesh.local_mesh is mesh and mesh.local_devices == devs
    assert str(mesh) == "Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto))"
    assert repr(mesh) == ("Mesh(axis_sizes=(2, 4), axis_names=('x', 'y'), "
                          "axis_types=(Auto, Auto))")


def test_meshes_are_interned(mesh, devs):
    assert Mesh(np.array(devs).reshape(2, 4), ("x", "y")) is mesh
    assert Mesh(np.array(devs).reshape(2, 4), ("x", "y"), AxisType.Explicit) is not mesh
    assert AbstractMesh((2, 4), ("x", "y")) is AbstractMesh((2, 4), ("x", "y"))
    assert P("x", None) is P("x", None)
    assert pickle.loads(pickle.dumps(P("x", ("y", None)))) is P("x", ("y", None))


def test_abstract_mesh_equal_across_meshes_of_one_shape(devs):
    a = Mesh(devs[:2], "x").abstract_mesh
    b = Mesh(devs[2:4], "x").abstract_mesh
    assert a is b and a != AbstractMesh((2,), ("x",))  # the latter names no device kind
    assert repr(a) == ("AbstractMesh('x': 2, axis_types=(Auto,), device_kind=cpu, "
                       "num_cores=None, platform=cpu)")
    assert repr(AbstractMesh((2,), ("x",))) == "AbstractMesh('x': 2, axis_types=(Auto,))"
    with pytest.raises(ValueError, match="AbstractMesh does not implement devices"):
        _ = a.devices


def test_bad_meshes(devs):
    with pytest.raises(ValueError, match="rank of `devices`"):
        Mesh(np.array(devs).reshape(2, 4), ("x",))
    with pytest.raises(ValueError, match="unique"):
        Mesh(np.array(devs[:4]).reshape(2, 2), ("x", "x"))
    with pytest.raises(ValueError, match="more than once"):
        Mesh([devs[0], devs[0]], "x")
    with pytest.raises(TypeError, match="must be plax devices"):
        Mesh([0, 1], "x")
    with pytest.raises(ValueError, match="2 axis_types"):
        Mesh(devs[:2], "x", (AxisType.Auto, AxisType.Auto))
    with pytest.raises(ValueError, match="positive integers"):
        AbstractMesh((0,), ("x",))


def test_make_mesh(devs):
    mesh = plax.make_mesh((4, 2), ("a", "b"))
    assert mesh.device_ids.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert plax.make_mesh((2,), ("a",), devices=devs[4:]).device_ids.tolist() == [4, 5]
    with pytest.raises(ValueError, match="Number of devices 8 must be >="):
        plax.make_mesh((4, 4), ("a", "b"))


def test_mesh_context_managers(mesh):
    assert plax.sharding.get_abstract_mesh().empty and plax.sharding.get_mesh() is None
    with plax.set_mesh(mesh):
        assert plax.sharding.get_mesh() is mesh
        assert plax.sharding.get_abstract_mesh() is mesh.abstract_mesh
        with plax.sharding.use_abstract_mesh(AbstractMesh((8,), ("z",))):
            assert plax.sharding.get_abstract_mesh().axis_names == ("z",)
            assert plax.sharding.get_mesh() is mesh
        assert plax.sharding.get_abstract_mesh() is mesh.abstract_mesh
    assert plax.sharding.get_mesh() is None
    with mesh:
        assert plax.sharding.get_mesh() is mesh
    assert plax.sharding.get_mesh() is None
    with pytest.raises(ValueError, match="expects a plax.sharding.Mesh"):
        plax.set_mesh(mesh.abstract_mesh)


# --- partition specs and NamedSharding -----------------------------------------------------

def test_partition_spec():
    assert repr(P("x")) == "P('x',)" and repr(P()) == "P()"
    assert repr(P(P.UNCONSTRAINED, ("x", "y"))) == "P(UNCONSTRAINED, ('x', 'y'))"
    assert P(("x",)) == P("x") and P(["x", "y"]) == P(("x", "y"))
    assert P("x", None) != P("x") and hash(P("x", None)) == hash(P("x"))
    assert len(P("x", None)) == 2 and list(P("x", ("a", "b"))) == ["x", ("a", "b")]
    assert P("x", "y")[1:] == ("y",) and P("x") + P("y") == P("x", "y")
    assert P(("x", None)).axes_of(0) == ("x",)
    with pytest.raises(TypeError, match="mesh axis names only"):
        P((P.UNCONSTRAINED, "x"))


def test_named_sharding_checks_its_spec(mesh):
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(ValueError, match="duplicate entries for `x`"):
        NamedSharding(mesh, P("x", "x"))
    with pytest.raises(TypeError, match="must be a PartitionSpec"):
        NamedSharding(mesh, ("x",))
    with pytest.raises(ValueError, match="memory kind"):
        NamedSharding(mesh, P(), memory_kind="hbm")


def test_named_sharding_members(mesh, devs):
    s = NamedSharding(mesh, P("x"))
    assert s.device_set == set(devs) and s.num_devices == 8 and s.memory_kind == "device"
    assert not s.is_fully_replicated and s.is_fully_addressable
    assert NamedSharding(mesh, P()).is_fully_replicated
    assert s == NamedSharding(mesh, P("x", None)) and hash(s) == hash(NamedSharding(mesh, P("x")))
    assert s != NamedSharding(mesh, P("y"))
    assert repr(s) == ("NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), "
                       "spec=P('x',), memory_kind=device)")
    assert s.with_memory_kind("pinned_host").memory_kind == "pinned_host"
    assert s.update(spec=P("y")).spec == P("y")
    abstract = NamedSharding(mesh.abstract_mesh, P("x"))
    assert pickle.loads(pickle.dumps(abstract)) == abstract
    assert str(s._to_xla_hlo_sharding(2)) == "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"
    assert str(NamedSharding(mesh, P("y", "x"))._to_xla_hlo_sharding(2)) == \
        "{devices=[4,2]<=[2,4]T(1,0)}"
    with pytest.raises(ValueError, match="only valid for values of rank at least 2"):
        NamedSharding(mesh, P("x", "y")).shard_shape((8,))


def test_abstract_named_sharding_has_no_devices():
    s = NamedSharding(AbstractMesh((2,), ("x",)), P("x"))
    assert not s._is_concrete and s.num_devices == 2
    with pytest.raises(ValueError, match="AbstractMesh, which names no devices"):
        _ = s.device_set
    with pytest.raises(ValueError, match="AbstractMesh, which names no devices"):
        plax.device_put(np.ones(4), s)


SPECS = [P("x"), P("x", "y"), P(None, "y"), P(("x", "y")), P(), P("y", "x"), P(("y", "x"))]


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_addressable_shards_follow_devices_indices_map(mesh, spec):
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    s = NamedSharding(mesh, spec)
    a = plax.device_put(x, s)
    expected = s.devices_indices_map(x.shape)
    assert a.sharding is s and a.committed
    shards = a.addressable_shards
    assert [sh.device for sh in shards] == list(mesh.devices.flat)
    replicas: dict = {}
    for sh in shards:
        assert sh.index == expected[sh.device]
        assert sh.data.shape == s.shard_shape(x.shape) == x[sh.index].shape
        np.testing.assert_array_equal(np.asarray(sh.data), x[sh.index])
        assert sh.data.sharding == SingleDeviceSharding(sh.device)
        key = tuple((i.start, i.stop) for i in sh.index)
        assert sh.replica_id == replicas.setdefault(key, -1) + 1
        replicas[key] = sh.replica_id
    assert a.global_shards[3].index == shards[3].index
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(plax.device_get({"a": a})["a"], x)


def test_indices_match_a_hand_computed_layout(mesh, devs):
    s = NamedSharding(mesh, P(None, "y"))
    m = s.devices_indices_map((4, 8))
    for i, d in enumerate(devs):
        assert m[d] == (slice(None), slice(2 * (i % 4), 2 * (i % 4) + 2))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.bool_, np.complex64,
                                   np.float16, "bfloat16"])
def test_round_trips_are_exact(mesh, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 8)) * 50).astype(dtype)
    a = plax.device_put(x, NamedSharding(mesh, P("x", "y")))
    back = np.asarray(a)
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back, x)


def test_uneven_dimension_names_the_axis_and_sizes(mesh):
    with pytest.raises(ValueError, match=r"array axis 1 of size 6 .* mesh axes 'y' \(size 4\)"
                                         r".*not divisible by 4"):
        plax.device_put(np.ones((2, 6)), NamedSharding(mesh, P("x", "y")))
    with pytest.raises(ValueError, match=r"'x' \(size 2\) x 'y' \(size 4\), 8 pieces"):
        plax.device_put(np.ones(12), NamedSharding(mesh, P(("x", "y"))))


def test_resharding_an_array(mesh, devs):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    a = plax.device_put(x, NamedSharding(mesh, P("x")))
    for target in (NamedSharding(mesh, P(None, "y")), NamedSharding(Mesh(devs[:2], "z"), P()),
                   SingleDeviceSharding(devs[5])):
        b = plax.device_put(a, target)
        assert b.sharding == target
        np.testing.assert_array_equal(np.asarray(b), x)


def test_make_array_from_callback_places_each_piece(mesh):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    seen = []

    def piece(index):
        seen.append(index)
        return x[index]

    s = NamedSharding(mesh, P(None, "y"))
    a = plax.make_array_from_callback(x.shape, s, piece)
    assert a.sharding is s and len(seen) == 4  # once per distinct piece
    np.testing.assert_array_equal(np.asarray(a), x)
    with pytest.raises(ValueError, match="returned shape"):
        plax.make_array_from_callback(x.shape, s, lambda index: x)


def test_make_array_from_process_local_data(mesh):
    x = np.arange(16.0).reshape(8, 2)
    s = NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(plax.make_array_from_process_local_data(s, x)), x)
    with pytest.raises(ValueError, match="needs either all 16 elements or this process.s 2 block"):
        plax.make_array_from_process_local_data(s, x, (16, 2))


def test_array_reports(mesh):
    a = plax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    assert a.on_device_size_in_bytes() == 8 * 4 * 4  # all shards together, as in JAX
    a.copy_to_host_async()
    assert repr(a).startswith("Array([[1., 1., 1., 1.],")
    assert a.is_fully_addressable and not a.is_fully_replicated
    assert a.device == a.sharding and a.devices() == set(mesh.devices.flat)


# --- global shard counts -------------------------------------------------------------------

class _Remote:
    """A device of another process, as a multi-process mesh would list it."""
    platform = "cpu"
    process_index = 1
    device_kind = "cpu"

    def __init__(self, id):
        self.id = id


def test_global_and_addressable_counts_differ(devs, monkeypatch):
    """A sharding over 8 devices of which 4 belong to 'another process': index maps,
    shard counts and replica ids are global; addressable views are the local part."""
    s = NamedSharding(Mesh(np.array(devs).reshape(2, 4), ("x", "y")), P("x"))
    remote = set(devs[4:])
    monkeypatch.setattr("plax._src.sharding._is_addressable", lambda d: d not in remote)
    assert s.num_devices == 8 and len(s.devices_indices_map((4, 2))) == 8
    local = s.addressable_devices_indices_map((4, 2))
    assert set(local) == set(devs[:4]) and all(i == (slice(0, 2), slice(None))
                                               for i in local.values())
    assert s.addressable_devices == set(devs[:4])
    # The executable's result handlers are built for the global sharding (8 devices).
    assert len(s._to_jaxlib_sharding(2)._internal_device_list) == 8
