"""Shardings: the core base class's derived members and the runtime's concrete kinds."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from jaxlib import xla_client as xc

import plax
from plax.extend.sharding import Sharding
from plax_runtime import api
from plax_runtime.device_put import device_put
from plax_runtime.sharding_impls import GSPMDSharding, SingleDeviceSharding

HLO = xc.HloSharding


@pytest.fixture(scope="module")
def devs():
    return api.devices()


def test_single_device_sharding(devs):
    s = SingleDeviceSharding(devs[2])
    assert s.device_set == {devs[2]} == s.addressable_devices
    assert s.num_devices == 1 and s.is_fully_replicated and s.is_fully_addressable
    assert s.memory_kind == "device"
    assert s.devices_indices_map((4, 5)) == {devs[2]: (slice(None), slice(None))}
    assert s.shard_shape((4, 5)) == (4, 5)
    assert s == SingleDeviceSharding(devs[2]) and hash(s) == hash(SingleDeviceSharding(devs[2]))
    assert s != SingleDeviceSharding(devs[3])
    assert repr(s) == "SingleDeviceSharding(device=CpuDevice(id=2), memory_kind=device)"
    pinned = s.with_memory_kind("pinned_host")
    assert pinned.memory_kind == "pinned_host" and pinned != s
    with pytest.raises(ValueError, match="memory kind"):
        SingleDeviceSharding(devs[0], memory_kind="hbm")
    with pytest.raises(TypeError, match="expects devices"):
        SingleDeviceSharding("cpu:0")


def test_tiled_gspmd_indices(devs):
    s = GSPMDSharding(devs[:4], HLO.iota_tile([2, 2]))
    assert s.devices_indices_map((4, 6)) == {
        devs[0]: (slice(0, 2), slice(0, 3)), devs[1]: (slice(0, 2), slice(3, 6)),
        devs[2]: (slice(2, 4), slice(0, 3)), devs[3]: (slice(2, 4), slice(3, 6))}
    assert s.shard_shape((4, 6)) == (2, 3)
    assert not s.is_fully_replicated and s.is_fully_addressable and s.num_devices == 4
    assert repr(s) == "GSPMDSharding({devices=[2,2]<=[4]}, memory_kind=device)"  # as JAX's


def test_transposed_tile_assignment(devs):
    # Logical device order 0, 2, 1, 3 over the tiles: devs[2] holds tile (0, 1).
    s = GSPMDSharding(devs[:4], HLO.from_string("{devices=[2,2]<=[2,2]T(1,0)}"))
    indices = s.devices_indices_map((2, 2))
    assert indices[devs[2]] == (slice(0, 1), slice(1, 2))
    assert indices[devs[1]] == (slice(1, 2), slice(0, 1))


def test_partial_replication(devs):
    s = GSPMDSharding(devs[:4], HLO.from_string("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"))
    indices = s.devices_indices_map((4, 3))
    assert indices[devs[0]] == indices[devs[1]] == (slice(0, 2), slice(None))
    assert indices[devs[2]] == indices[devs[3]] == (slice(2, 4), slice(None))
    assert s.shard_shape((4, 3)) == (2, 3)


def test_uneven_tiles_follow_xla_but_cannot_hold_data(devs):
    s = GSPMDSharding(devs[:4], HLO.iota_tile([4]))
    assert list(s.devices_indices_map((5,)).values()) == [
        (slice(0, 2),), (slice(2, 4),), (slice(4, 5),), (slice(5, 5),)]
    with pytest.raises(ValueError, match="axis 0 of an array of shape \\(5,\\).*not evenly"):
        s.shard_shape((5,))
    with pytest.raises(ValueError, match="not evenly divisible"):
        device_put(np.arange(5), s)


def test_replicated_spellings_are_equivalent(devs):
    a = GSPMDSharding.get_replicated(devs[:2])
    b = GSPMDSharding(devs[:2], HLO.from_string("{devices=[1,1,2]<=[2] last_tile_dim_replicate}"))
    assert a == b and hash(a) == hash(b) and a.is_fully_replicated and b.is_fully_replicated
    assert a.is_equivalent_to(b, 2)
    assert not a.is_equivalent_to(GSPMDSharding.get_replicated(devs[2:4]), 2)
    assert SingleDeviceSharding(devs[0]).is_equivalent_to(GSPMDSharding.get_replicated(devs[:1]), 1)


def test_rank_and_device_count_mismatches(devs):
    with pytest.raises(ValueError, match="spans 4 devices, but 2"):
        GSPMDSharding(devs[:2], HLO.iota_tile([4]))
    s = GSPMDSharding(devs[:4], HLO.iota_tile([2, 2]))
    with pytest.raises(ValueError, match="tiles 2 axes, but the array has rank 1"):
        s.devices_indices_map((4,))
    with pytest.raises(ValueError, match="more than once"):
        GSPMDSharding([devs[0], devs[0]], HLO.replicate())


def test_jaxlib_sharding_is_cached_and_cpp(devs):
    s = GSPMDSharding(devs[:4], HLO.iota_tile([4, 1]))
    j = s._to_jaxlib_sharding(2)
    assert isinstance(j, xc.GSPMDSharding) and j is s._to_jaxlib_sharding(2)
    assert list(j._devices) == devs[:4] and j._hlo_sharding == HLO.iota_tile([4, 1])
    single = SingleDeviceSharding(devs[5])
    assert single._to_jaxlib_sharding(1) is SingleDeviceSharding(devs[5])._to_jaxlib_sharding(3)


class ColumnSharding(Sharding):
    """A minimal third-party sharding: columns split over devices, defined only by the
    base-class protocol (as NamedSharding will be)."""

    def __init__(self, devices):
        self._devices = tuple(devices)

    device_set = property(lambda self: set(self._devices))
    is_fully_replicated = property(lambda self: len(self._devices) == 1)
    is_fully_addressable = property(lambda self: True)
    num_devices = property(lambda self: len(self._devices))
    memory_kind = property(lambda self: "device")
    _device_assignment = property(lambda self: self._devices)

    def with_memory_kind(self, kind):
        raise NotImplementedError

    def _to_xla_hlo_sharding(self, ndim):
        return HLO.iota_tile([1] * (ndim - 1) + [len(self._devices)])

    def __eq__(self, other):
        return isinstance(other, ColumnSharding) and other._devices == self._devices

    def __hash__(self):
        return hash(self._devices)


def test_subclass_defined_by_the_protocol_places_data(devs):
    s = ColumnSharding(devs[4:8])
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    a = device_put(x, s)
    assert a.sharding is s and a.devices() == set(devs[4:8])
    for shard in a.addressable_shards:
        assert isinstance(shard, plax.Shard)  # JAX's public name for the class
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        assert shard.data.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(a), x)


_TILINGS = [(1,), (2,), (4,), (8,), (2, 2), (1, 4), (4, 2), (2, 1, 2), (2, 2, 2)]


@given(tiles=st.sampled_from(_TILINGS), data=st.data())
def test_shards_reassemble_the_array(tiles, data):
    """Every tiling of every evenly divisible shape: the shards are exactly the array."""
    devices = api.devices()[:int(np.prod(tiles))]
    shape = tuple(t * data.draw(st.integers(0, 3)) for t in tiles)
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    s = GSPMDSharding(devices, HLO.iota_tile(list(tiles)))
    a = device_put(x, s)
    covered = np.zeros(shape, bool)
    for shard in a.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        covered[shard.index] = True
    assert covered.all()
    np.testing.assert_array_equal(np.asarray(a), x)
