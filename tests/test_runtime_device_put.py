"""device_put: host values and Arrays onto devices, dtype rules, batching, aliasing."""
import ml_dtypes
import numpy as np
import pytest
from jaxlib import xla_client as xc

from plax.extend import config
from plax_runtime import api, placement
from plax_runtime.array import Array
from plax_runtime.device_put import device_put
from plax_runtime.sharding_impls import GSPMDSharding, SingleDeviceSharding

_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
           np.complex128]
_NARROWED = {np.dtype(np.int64): np.int32, np.dtype(np.uint64): np.uint32,
             np.dtype(np.float64): np.float32, np.dtype(np.complex128): np.complex64}


def _sample(dtype):
    """Values that exercise the dtype's range and, for floats, its precision."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([True, False, True])
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.array([info.min, 0, 1, info.max], dtype)
    if dtype.kind == "c":
        return np.array([1 + 2j, -0.5j, 3.25], dtype)
    return np.array([-1.5, 0.0, 0.1, 65504.0], dtype)


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_on_every_device(dtype, x64):
    x = _sample(dtype)
    with config.enable_x64(x64):
        expected_dtype = np.dtype(dtype) if x64 else np.dtype(_NARROWED.get(np.dtype(dtype), dtype))
        for device in api.devices():
            a = device_put(x, device)
            assert a.devices() == {device} and a.committed
            assert a.dtype == expected_dtype and a.shape == x.shape and not a.weak_type
            back = np.asarray(a)
            assert back.dtype == expected_dtype
            np.testing.assert_array_equal(back, x.astype(expected_dtype))


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.float8_e4m3fn],
                         ids=lambda d: np.dtype(d).name)
def test_narrow_dtypes_round_trip(dtype):
    x = np.array([1, -2, 3, 0]).astype(dtype)
    a = device_put(x, api.devices()[1])
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(a), x)


@pytest.mark.parametrize("x64", [False, True])
def test_python_scalars_are_weakly_typed(x64):
    with config.enable_x64(x64):
        wide = "64" if x64 else "32"
        cases = [(True, "bool", False), (3, f"int{wide}", True), (2.5, f"float{wide}", True),
                 (1 + 2j, "complex128" if x64 else "complex64", True)]
        for value, dtype, weak in cases:
            a = device_put(value)
            assert (a.dtype.name, a.weak_type, a.shape) == (dtype, weak, ())
            assert a.item() == value
        assert not device_put(np.float32(1.5)).weak_type


def test_big_endian_input():
    x = np.arange(4, dtype=">i4")
    a = device_put(x)
    assert a.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(a), [0, 1, 2, 3])


def test_python_int_overflow_is_reported():
    with pytest.raises(OverflowError, match="Python int 4294967296 .* int32"):
        device_put(2 ** 32)


def test_a_bare_partition_spec_names_the_context_mesh(mesh):
    import plax
    from plax.sharding import AxisType, NamedSharding, PartitionSpec as P
    x = np.arange(8.0, dtype=np.float32)
    with pytest.raises(ValueError, match=r"PartitionSpec P\('x',\), which needs a mesh"):
        device_put(x, P("x"))
    with plax.set_mesh(mesh):
        placed = device_put({"a": x, "b": x}, {"a": P("x"), "b": P()})
    assert placed["a"].sharding == NamedSharding(mesh, P("x"))
    assert placed["b"].sharding.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(placed["a"]), x)
    explicit = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    with plax.set_mesh(explicit):
        typed = device_put(x, P("y"))
    assert plax.typeof(typed).sharding.spec == P("y")
    assert [s.data.shape for s in typed.addressable_shards] == [(2,)] * 8


def test_invalid_values_are_type_errors():
    with pytest.raises(TypeError, match="not a valid plax array type"):
        device_put(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="value of type str is not a valid plax array"):
        device_put("text")
    with pytest.raises(ValueError,  # JAX's class for a target it does not take
                       match="device must be a Device, a Sharding, a PartitionSpec, a "
                             "plax.memory.Space or None"):
        device_put(1.0, "cpu:0")
    with pytest.raises(ValueError, match="masked arrays"):
        device_put(np.ma.masked_array([1, 2], mask=[0, 1]))
    with pytest.raises(ValueError, match="may_alias=True and donate=True"):
        device_put(np.ones(2), donate=True, may_alias=True)


def test_default_placement_is_uncommitted():
    a = device_put(np.ones(3))
    assert not a.committed and a.devices() == {api.devices()[0]}
    assert device_put(a) is a
    b = device_put(a, api.devices()[0])
    assert b.committed and b.sharding == SingleDeviceSharding(api.devices()[0])


def test_default_device_option():
    with config.default_device(api.devices()[5]):
        a = device_put(np.ones(2))
    assert a.devices() == {api.devices()[5]} and not a.committed


def _aligned_zeros(n):
    """float32 zeros at a 64-byte boundary, which XLA's CPU client can alias."""
    raw = np.zeros(4 * n + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + 4 * n].view(np.float32)


def test_host_array_is_not_aliased_unless_asked():
    x = _aligned_zeros(1024)
    a = device_put(x, api.devices()[0])
    x[0] = 7
    assert np.asarray(a)[0] == 0
    base = _aligned_zeros(1024)
    view = base[:]
    view.flags.writeable = False
    b = device_put(view)
    base[0] = 7  # a write through the base must not reach a read-only view's copy
    assert np.asarray(b)[0] == 0
    y = _aligned_zeros(1024)
    c = device_put(y, may_alias=True)
    assert c.unsafe_buffer_pointer() == y.ctypes.data


class _Counter:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def counters(monkeypatch):
    put = _Counter(placement._batched_device_put)
    copy = _Counter(placement._batched_copy)
    monkeypatch.setattr(placement, "_batched_device_put", put)
    monkeypatch.setattr(placement, "_batched_copy", copy)
    return put, copy


def test_pytree_transfers_are_batched(counters):
    put, copy = counters
    devs = api.devices()
    tree = {"a": np.arange(3), "b": [1.0, np.ones((2, 2), np.float32)], "c": None}
    out = device_put(tree, devs[1])
    assert put.calls == 3 and copy.calls == 0  # one batched_device_put per host leaf
    assert out["c"] is None
    np.testing.assert_array_equal(np.asarray(out["b"][1]), np.ones((2, 2)))
    moved = device_put(out, devs[6])
    assert put.calls == 3 and copy.calls == 1  # every Array leaf in ONE copy call
    for leaf in (moved["a"], moved["b"][0], moved["b"][1]):
        assert leaf.devices() == {devs[6]} and leaf.committed
    np.testing.assert_array_equal(np.asarray(moved["a"]), np.arange(3))
    assert moved["b"][0].weak_type and moved["b"][0].item() == 1.0


def test_same_placement_is_not_copied(counters):
    put, copy = counters
    a = device_put(np.arange(4.0))
    b = device_put(a, api.devices()[0])
    assert copy.calls == 0 and b.unsafe_buffer_pointer() == a.unsafe_buffer_pointer()
    c = device_put(a, api.devices()[0], may_alias=False)
    assert copy.calls == 1 and c.unsafe_buffer_pointer() != a.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(c), np.arange(4.0))


def test_device_tree_prefix():
    devs = api.devices()
    out = device_put([np.ones(2), (np.zeros(1), 3)], [devs[2], devs[3]])
    assert out[0].devices() == {devs[2]}
    assert out[1][0].devices() == out[1][1].devices() == {devs[3]}
    with pytest.raises(ValueError, match="pytree prefix"):
        device_put([np.ones(2)], [devs[0], devs[1]])


def test_donation_deletes_copied_inputs():
    devs = api.devices()
    a = device_put(np.arange(3.0), devs[0])
    b = device_put(a, devs[1], donate=True)
    assert a.is_deleted()
    np.testing.assert_array_equal(np.asarray(b), np.arange(3.0))
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        device_put(a, devs[2])


def test_sharded_put_and_resharding():
    devs = api.devices()
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    rows = GSPMDSharding(devs[:4], xc.HloSharding.iota_tile([4, 1]))
    a = device_put(x, rows)
    assert a.sharding is rows and a.devices() == set(devs[:4]) and a.committed
    # Same layout on other devices: a device-to-device copy.
    rows_elsewhere = GSPMDSharding(devs[4:], xc.HloSharding.iota_tile([4, 1]))
    b = device_put(a, rows_elsewhere)
    assert b.devices() == set(devs[4:])
    # Another layout: through the host.
    cols = GSPMDSharding(devs[:2], xc.HloSharding.iota_tile([1, 2]))
    c = device_put(b, cols)
    replicated = device_put(c, GSPMDSharding.get_replicated(devs[:8]))
    for arr in (a, b, c, replicated):
        np.testing.assert_array_equal(np.asarray(arr), x)
    assert replicated.is_fully_replicated
    assert all(s.data.shape == (8, 4) for s in replicated.addressable_shards)
    single = device_put(a, devs[7])
    np.testing.assert_array_equal(np.asarray(single), x)


def test_block_until_ready_on_pytrees():
    tree = device_put({"x": np.ones(3), "y": [np.zeros(2)]})
    assert api.block_until_ready(tree) is tree
    assert isinstance(tree["x"], Array)


# --- batches: many leaves sharing one prepared put or one move plan -----------------

def _named(devices, shape, spec, memory_kind=None):
    from plax.sharding import Mesh, NamedSharding
    return NamedSharding(Mesh(np.array(devices).reshape(shape), ("x", "y")[:len(shape)]),
                         spec, memory_kind=memory_kind)


def test_many_host_arrays_onto_split_and_replicated_targets():
    """Like NumPy arrays share a prepared put per (shape, dtype, target, aliasing);
    every shard holds its slice, and later writes to the host arrays never reach
    the copies (only the may_alias=True ones may alias): pieces no two devices share
    are copied from views of the host array, pieces devices share from one host copy
    (jaxlib cannot copy those from views)."""
    from plax.sharding import PartitionSpec as P
    devs = api.devices()
    split = _named(devs[:8], (4, 2), P("x", "y"))
    replicated = _named(devs[:4], (4,), P())
    shared_rows, shared_columns = (_named(devs[:8], (4, 2), spec)
                                   for spec in (P("x"), P(None, "y")))
    rng = np.random.default_rng(0)
    values = ([rng.standard_normal((8, 4)).astype(np.float32) for _ in range(5)]
              + [np.arange(16, dtype=np.int32).reshape(4, 4) + i for i in range(3)]
              + [rng.standard_normal((4, 2)) for _ in range(2)]  # float64, narrowed
              + [rng.standard_normal((8, 4)).astype(np.float32) for _ in range(2)])
    kept = [v.copy() for v in values]
    targets = [split] * 8 + [replicated] * 2 + [shared_rows, shared_columns]
    out = device_put(values, targets)
    for v in values:
        v[...] = -1
    for value, target, arr in zip(kept, targets, out):
        assert arr.sharding == target and arr.committed
        assert arr.dtype == _NARROWED.get(value.dtype, value.dtype)
        index_map = target.addressable_devices_indices_map(value.shape)
        assert {s.device for s in arr.addressable_shards} == set(index_map)
        for shard in arr.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data),
                                          value[index_map[shard.device]].astype(arr.dtype))
    aliased = [np.zeros((8, 4), np.float32) for _ in range(2)]
    for arr, v in zip(device_put(aliased, split, may_alias=True), aliased):
        np.testing.assert_array_equal(np.asarray(arr), v)


def test_broadcast_views_onto_split_targets():
    """A NumPy broadcast view (zero strides, as `np.broadcast_to` makes) placed on a
    split sharding: its pieces overlap in memory, which jaxlib refuses
    ("bad_function_call"), so each is copied first; JAX places it too."""
    from plax.sharding import PartitionSpec as P
    split = _named(api.devices()[:8], (4, 2), P("x", "y"))
    for may_alias in (None, True):
        view = np.broadcast_to(np.arange(4, dtype=np.float32), (8, 4))
        arr = device_put(view, split, may_alias=may_alias)
        assert arr.sharding == split
        np.testing.assert_array_equal(np.asarray(arr), view)


def test_many_moves_share_plans_and_one_copy(counters):
    """Leaves of several ranks and dtypes moving between the same shardings (other
    devices, other memory kind, the same place with and without a copy): one
    batched copy for all that need one, each result checked shard by shard."""
    from plax.sharding import PartitionSpec as P
    put, copy = counters
    devs = api.devices()
    here = _named(devs[:4], (4,), P("x"))
    there = _named(devs[4:8], (4,), P("x"))
    pinned = _named(devs[4:8], (4,), P("x"), memory_kind="pinned_host")
    values = [np.arange(8, dtype=np.float32) * (i + 1) for i in range(4)]
    values += [np.arange(16, dtype=np.int32).reshape(4, 4) - i for i in range(3)]
    sources = device_put(values, here)
    copies_before = copy.calls
    targets = [there, pinned, there, here, there, pinned, here]
    aliasing = [None, None, None, False, None, None, None]
    moved = device_put(sources, targets, may_alias=aliasing)
    assert copy.calls == copies_before + 1
    for value, source, target, alias, out in zip(values, sources, targets, aliasing, moved):
        assert out.sharding == target and out.sharding.memory_kind == target.memory_kind
        index_map = target.addressable_devices_indices_map(value.shape)
        for shard in out.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data),
                                          value[index_map[shard.device]])
        if target is here:  # the same place: shared buffers unless a copy was asked
            pointers = [[s.data.unsafe_buffer_pointer() for s in a.addressable_shards]
                        for a in (out, source)]
            shared = pointers[0] == pointers[1]
            assert shared == (alias is not False)
    assert not any(s.is_deleted() for s in sources)
    donated = device_put(sources[:2], there, donate=True)
    assert all(s.is_deleted() for s in sources[:2])
    for value, out in zip(values, donated):
        np.testing.assert_array_equal(np.asarray(out), value)


def test_grouped_leaves_keep_their_own_target_objects():
    """Equal targets spelled differently stay as each leaf's own object."""
    from plax.sharding import PartitionSpec as P
    devs = api.devices()
    short = _named(devs[:4], (4,), P("x"))
    long = type(short)(short.mesh, P("x", None))
    assert short == long
    out = device_put([np.ones((4, 2), np.float32)] * 2, [short, long])
    assert out[0].sharding is short and out[1].sharding is long
    moved = device_put(out, [long, short])
    assert moved[0].sharding is long and moved[1].sharding is short
