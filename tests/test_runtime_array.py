"""plax.Array: metadata, host conversion, deletion, shards, DLPack, pickling."""
import pickle

import ml_dtypes
import numpy as np
import pytest
from jax_differential import assert_same_bits_as_jax, requires_jax
from jax_reference import run_reference
from jaxlib import xla_client as xc

from plax.extend.core import ShapedArray
from plax_runtime import api
from plax_runtime.array import Array, make_array_from_single_device_arrays
from plax_runtime.device_put import device_put
from plax_runtime.dlpack import from_dlpack
from plax_runtime.sharding_impls import GSPMDSharding, SingleDeviceSharding


def test_metadata():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    a = device_put(x, api.devices()[3])
    assert (a.shape, a.dtype, a.ndim, a.size, a.itemsize, a.nbytes) == ((2, 3), np.int16, 2,
                                                                         6, 2, 12)
    assert a.aval == ShapedArray((2, 3), np.int16) and not a.weak_type
    assert a.device == api.devices()[3] and a.devices() == {api.devices()[3]}
    assert a.sharding == SingleDeviceSharding(api.devices()[3])
    assert a.is_fully_replicated and a.is_fully_addressable and a.committed
    assert a.platform() == "cpu"
    assert a.on_device_size_in_bytes() == 12
    assert isinstance(a.unsafe_buffer_pointer(), int)
    assert type(a).__module__ == "plax" and repr(type(a)) == "<class 'plax.Array'>"


def test_not_constructible_and_unhashable():
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        Array()
    with pytest.raises(TypeError, match="unhashable"):
        hash(device_put(1.0))


def test_repr():
    assert repr(device_put(np.array([1.0, 2.0], np.float32))) == "Array([1., 2.], dtype=float32)"
    assert repr(device_put(2.5)) == "Array(2.5, dtype=float32, weak_type=True)"
    assert repr(device_put(np.zeros((0, 3), np.int32))) == (
        "Array([], shape=(0, 3), dtype=int32)")
    wide = repr(device_put(np.arange(40, dtype=np.int32).reshape(2, 20)))
    assert wide.startswith("Array([[ 0,  1,") and wide.endswith("dtype=int32)")
    assert all(line.startswith("Array(") or line.startswith("      ")
               for line in wide.splitlines())
    assert str(device_put(np.array([1, 2], np.int32))) == "[1 2]"
    assert f"{device_put(np.float32(0.25)):.3f}" == "0.250"


def test_numpy_conversion_is_read_only_and_cached():
    a = device_put(np.arange(4.0, dtype=np.float32))
    v = np.asarray(a)
    assert v.dtype == np.float32 and not v.flags.writeable
    assert np.asarray(a) is v
    np.testing.assert_array_equal(np.asarray(a, dtype=np.int32), [0, 1, 2, 3])
    copy = np.array(a, copy=True)
    copy[0] = 9  # a writable copy does not change the array
    assert np.asarray(a)[0] == 0
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0] and a.item(2) == 2.0


def test_bfloat16_conversion():
    x = np.array([1.5, -2.0], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(np.asarray(device_put(x)), x)


def test_scalar_conversions():
    assert bool(device_put(np.array([True]))) is True
    assert int(device_put(7)) == 7 and float(device_put(0.5)) == 0.5
    assert complex(device_put(1 + 1j)) == 1 + 1j
    assert [10, 20, 30][device_put(np.int32(1))] == 20
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        bool(device_put(np.ones(2)))
    with pytest.raises(ValueError, match="empty array is ambiguous"):
        bool(device_put(np.ones(0)))
    with pytest.raises(TypeError, match=r"Only scalar arrays .* shape \(1,\)"):
        int(device_put(np.ones(1)))
    with pytest.raises(TypeError, match="integer scalar arrays .* float32"):
        [1, 2][device_put(1.0)]


def test_len():
    assert len(device_put(np.zeros((5, 2)))) == 5
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(device_put(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(device_put(1.0))


def test_deleted_array_raises_on_use():
    a = device_put(np.arange(3.0))
    a.delete()
    assert a.is_deleted()
    assert a.shape == (3,) and a.dtype == np.float32  # metadata stays
    assert repr(a) == "Array(<deleted>, shape=(3,), dtype=float32)"
    for use in (np.asarray, lambda x: x.block_until_ready(), lambda x: x.addressable_shards,
                lambda x: x.tolist(), lambda x: x.__dlpack__(), lambda x: x.copy_to_host_async(),
                lambda x: api.block_until_ready([x])):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[3\]"):
            use(a)


def test_block_until_ready_and_async_copy():
    a = device_put(np.ones(3))
    assert a.block_until_ready() is a and a.is_ready()
    a.copy_to_host_async()
    np.testing.assert_array_equal(np.asarray(a), np.ones(3))


def test_immutable_and_copyable():
    import copy
    a = device_put(np.arange(3.0), api.devices()[2])
    with pytest.raises(TypeError, match="immutable.*at\\[idx\\]"):
        a[0] = 1.0
    for b in (copy.copy(a), copy.deepcopy(a)):
        assert b is not a and b.sharding == a.sharding and b.committed
        assert b.unsafe_buffer_pointer() != a.unsafe_buffer_pointer()
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


def test_pickle_round_trip():
    for a in (device_put(np.arange(5, dtype=np.int8)), device_put(3.5)):
        b = pickle.loads(pickle.dumps(a))
        assert isinstance(b, Array) and b.aval == a.aval
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


def test_multi_device_array_from_shards():
    devs = api.devices()
    sharding = GSPMDSharding(devs[:4], xc.HloSharding.iota_tile([2, 2]))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    pieces = [device_put(x[idx], d)
              for d, idx in reversed(list(sharding.devices_indices_map(x.shape).items()))]
    a = make_array_from_single_device_arrays(x.shape, sharding, pieces)
    assert a.sharding is sharding and a.committed and a.devices() == set(devs[:4])
    assert a.device is sharding  # multi-device arrays report their sharding
    np.testing.assert_array_equal(np.asarray(a), x)
    shards = a.addressable_shards
    assert [s.device for s in shards] == devs[:4]
    np.testing.assert_array_equal(np.asarray(a.addressable_data(3)), x[2:, 2:])
    for s in shards:
        assert s.replica_id == 0 and s.data.aval == ShapedArray((2, 2), np.float32)
        assert s.data.devices() == {s.device}
        np.testing.assert_array_equal(np.asarray(s.data), x[s.index])


def test_make_array_checks_its_pieces():
    devs = api.devices()
    sharding = GSPMDSharding(devs[:2], xc.HloSharding.iota_tile([2]))
    good = [device_put(np.zeros(2), devs[0]), device_put(np.ones(2), devs[1])]
    with pytest.raises(ValueError, match="shape \\(3,\\).*expects shape \\(2,\\)"):
        make_array_from_single_device_arrays((4,), sharding,
                                             [good[0], device_put(np.ones(3), devs[1])])
    with pytest.raises(ValueError, match="not an addressable device"):
        make_array_from_single_device_arrays((4,), sharding,
                                             [good[0], device_put(np.ones(2), devs[5])])
    with pytest.raises(ValueError, match="no array was given"):
        make_array_from_single_device_arrays((4,), sharding, good[:1])
    np.testing.assert_array_equal(
        np.asarray(make_array_from_single_device_arrays((4,), sharding, good)), [0, 0, 1, 1])


def test_replicated_shards_have_replica_ids():
    devs = api.devices()
    sharding = GSPMDSharding(devs[:4], xc.HloSharding.from_string(
        "{devices=[2,2]<=[4] last_tile_dim_replicate}"))
    a = device_put(np.arange(4), sharding)
    assert [s.replica_id for s in a.addressable_shards] == [0, 1, 0, 1]
    np.testing.assert_array_equal(np.asarray(a), np.arange(4))


def test_dlpack_with_numpy():
    a = device_put(np.arange(6, dtype=np.float32).reshape(2, 3), api.devices()[2])
    assert a.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(a), np.arange(6).reshape(2, 3))
    x = np.arange(5, dtype=np.int64)
    b = from_dlpack(x)
    assert b.shape == (5,) and b.dtype == np.int64 and b.devices() == {api.devices()[0]}
    np.testing.assert_array_equal(np.asarray(b), x)
    c = from_dlpack(x, device=api.devices()[4])
    assert c.devices() == {api.devices()[4]}
    np.testing.assert_array_equal(np.asarray(c), x)


def test_dlpack_between_plax_arrays():
    a = device_put(np.array([[1 + 2j, 3j]], np.complex64), api.devices()[1])
    b = from_dlpack(a, copy=True)
    assert b.aval == a.aval
    np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    with pytest.raises(TypeError, match="__dlpack__"):
        from_dlpack([1, 2])


def test_dlpack_of_sharded_array_is_refused():
    devs = api.devices()
    a = device_put(np.arange(4.0), GSPMDSharding(devs[:2], xc.HloSharding.iota_tile([2])))
    with pytest.raises(BufferError, match="sharded over 2 devices"):
        a.__dlpack__()


def test_plax_dlpack_module_uses_the_registry():
    import plax.dlpack
    a = plax.dlpack.from_dlpack(np.arange(3, dtype=np.int32))
    assert isinstance(a, Array)
    np.testing.assert_array_equal(np.asarray(a), [0, 1, 2])


# --- operators forward to plax.numpy (written by another package).

def test_operators_forward_to_plax_numpy():
    a = device_put(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(np.asarray(a + 1), [2, 3, 4])
    np.testing.assert_allclose(np.asarray(2 * a), [2, 4, 6])
    np.testing.assert_allclose(np.asarray(a[1:]), [2, 3])
    np.testing.assert_array_equal(np.asarray(a > 1.5), [False, True, True])
    assert a.reshape(3, 1).shape == (3, 1) and a.T.shape == (3,)
    assert [float(v) for v in a] == [1.0, 2.0, 3.0]


def test_operators_leave_attribute_forwarding_proxies_to_their_reflected_operator():
    """As JAX's: an operand whose *type* is not array-like makes the operator return
    NotImplemented, so the other side's reflected operator runs, even when the object
    forwards attribute lookups (flax's Cursor answers `aval` and `__array__` that way;
    asking them also recorded a change in it)."""
    class Proxy:
        def __init__(self, value):
            self.value, self.asked = value, []

        def __getattr__(self, name):
            self.asked.append(name)
            return getattr(self.value, name)

        def __radd__(self, other):
            return ("radd", other)

        def __rmul__(self, other):
            return ("rmul", other)

    a = device_put(np.array([1.0, 2.0], np.float32))
    proxy = Proxy(a)
    assert (a + proxy)[0] == "radd" and (a * proxy)[0] == "rmul"
    assert proxy.asked == []
    assert not (a == Proxy(a))  # neither side knows: Python's identity comparison


# --- the rest of jax.Array's methods: view, byteswap, compress, in, to_device... (vs JAX) ---

_METHODS_BODY = """
import warnings

def put(name, fn):  # the value (exactly: bfloat16 as its bits), or the error's class
    try:
        value = np.asarray(fn())
    except Exception as err:
        results[name] = np.array(type(err).__name__)
    else:
        results[name] = value.view(np.uint16) if value.dtype.name == "bfloat16" else value

x, f, c, b = (jnp.asarray(inputs[k]) for k in ("x", "f", "c", "b"))
for name, a in (("x", x), ("f", f), ("c", c), ("b", b)):
    put(f"{name}.byteswap", lambda: a.byteswap())
    put(f"{name}.byteswap.jit", lambda: lib.jit(lambda v: v.byteswap())(a))
    for dt in ("int8", "uint8", "int16", "float16", "bfloat16", "int32", "float32",
               "uint32", "complex64", "bool"):
        put(f"{name}.view.{dt}", lambda: a.view(dt))
        put(f"{name}.view.{dt}.jit", lambda: lib.jit(lambda v: v.view(dt))(a))
put("view.none", lambda: x.view() is x)
put("view.type", lambda: x.view(np.int16, type=np.ndarray))
put("view.0d", lambda: f[0, 0].view(np.int32))
put("view.0d.bad", lambda: f[0, 0].view(np.int16))
put("view.bad", lambda: x.view(np.int32))
put("compress", lambda: x.compress(np.array([True, False, True]), axis=1))
put("compress.flat", lambda: x.compress(np.array([True, False, True])))
put("compress.size", lambda: lib.jit(lambda v: v.compress(v[0] > 0, axis=1, size=2,
                                                          fill_value=-1))(x))
put("argpartition", lambda: f[0].argpartition(1))
put("ptp", lambda: lib.jit(lambda v: v.ptp(axis=1, keepdims=True))(x))
put("searchsorted", lambda: jnp.sort(f[0]).searchsorted(f[1], side="right"))
put("choose", lambda: (x[0] % 2).choose([x[0], -x[0]]))
put("contains", lambda: [2 in x[0], 9 in x[0], 2.0 in x[0], lib.jit(
    lambda v: v.__contains__(3))(x[0])])
for name, value in (("none", None), ("str", "a"), ("array", x[0]), ("2d", 1)):
    put(f"contains.{name}", lambda: value in (x if name == "2d" else x[0]))
put("flat", lambda: x.flat)
put("flat.traced", lambda: lib.jit(lambda v: v.flat)(x))
put("hex", lambda: [hex(x[0, 1]), x[0, 2].__hex__(), x[1, 2].__oct__()])
put("hex.float", lambda: f[0, 0].__hex__())
put("tobytes", lambda: [x.tobytes(), x.tobytes("F"), x.T.tobytes("A")])
put("clone", lambda: x.clone())
put("clone.shares", lambda: [x.clone() is x, x.clone().unsafe_buffer_pointer()
                             == x.unsafe_buffer_pointer()])
put("device_buffer", lambda: x.device_buffer)
put("device_buffers", lambda: hasattr(x, "device_buffers"))
put("cuda_array_interface", lambda: x.__cuda_array_interface__)
put("to_device", lambda: x.to_device(lib.devices()[1]).devices() == {lib.devices()[1]})
put("to_device.traced", lambda: lib.jit(lambda v: v.to_device(lib.devices()[0]) + 1)(x))
put("to_device.stream", lambda: x.to_device(lib.devices()[1], stream=0))
put("namespace", lambda: [x.__array_namespace__() is x.__array_namespace__(
    api_version="2024.12"), x.__array_namespace__().__array_api_version__])
put("namespace.version", lambda: x.__array_namespace__(api_version="2021.12"))
put("namespace.traced", lambda: lib.jit(lambda v: v.__array_namespace__().sum(v))(x))
put("array_module", lambda: [x.__array_module__((type(x), np.ndarray)) is not None,
                             x.__array_module__((list,)) is NotImplemented])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    put("numpy_dtype", lambda: np.zeros(2, dtype=x))
results["numpy_dtype.warned"] = np.array([w.category.__name__ for w in caught])
"""


def _methods_inputs():
    return {"x": np.arange(-3, 3, dtype=np.int16).reshape(2, 3),
            "f": np.array([[1.5, -2.0, np.inf, np.nan], [0.0, -0.0, 3.25, 1e-40]], np.float32),
            "c": np.array([[1 + 2j, np.inf - 1j], [np.nan + 0j, -0.0 + 5j]], np.complex64),
            "b": np.array([[True, False, True, True]])}


@requires_jax
def test_array_methods_are_jaxs():
    """byteswap, view (every pairing of dtypes), compress, argpartition, ptp,
    searchsorted, choose, `in`, flat, hex/oct, tobytes, clone, to_device, the array API
    namespace...: the same bits and error classes as JAX's, eagerly and under jit."""
    assert_same_bits_as_jax(_METHODS_BODY, _methods_inputs())


_ARRAY_ATTRIBUTES = """
names = set(dir(jnp.arange(3)))
result = sorted(n for n in names if not n.startswith("_") or n.endswith("__"))
"""
# jax.Array's attributes that are CPython's or ArrayImpl's own machinery, not API
_NOT_API = {"__annotations__", "__del__", "__dict__"}


@requires_jax
def test_arrays_have_every_attribute_of_jax_arrays():
    missing = set(run_reference(_ARRAY_ATTRIBUTES)) - set(dir(device_put(np.arange(3))))
    assert missing == _NOT_API
