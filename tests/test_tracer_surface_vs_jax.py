"""What a traced value answers for `jax.Array`'s attributes and methods, the array
API's `jnp.__array_namespace_info__`, the FutureWarning of an `x.at[...]` update
whose values do not cast safely to `x`'s dtype, and the exceptions of an axis out of
range, all with JAX 0.10.2 (run in a subprocess) as the specification. Everything is
traced, not compiled, so each side is one short subprocess."""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_reference import requires_jax, run_reference

# members of jax.Array a tracer answers from its type, or refuses (needing data)
TRACER_MEMBERS = [
    "itemsize", "nbytes", "sharding", "committed", "device", "addressable_shards",
    "devices()", "is_deleted()", "delete()", "tolist()", "tobytes()", "__dlpack__()",
    "on_device_size_in_bytes()", "is_fully_replicated", "is_fully_addressable",
    "global_shards", "addressable_data(0)", "copy_to_host_async()", "block_until_ready()",
    "unsafe_buffer_pointer()", "traceback", "__reversed__()", "format",
]

_CODE = r"""
import warnings
result = {}
members = %(members)r

def answers(kind):
    def probe(s):
        for name in members:
            try:
                value = eval("s." + name)
                out = repr(value) if name in ("itemsize", "nbytes") else "ok"
            except Exception as e:
                out = type(e).__name__
            result[f"{kind} {name}"] = out
        for name in ("sharding", "device", "devices", "block_until_ready", "copy_to_host_async"):
            result[f"{kind} hasattr {name}"] = hasattr(s, name)
        return s.sum()
    return probe

jax.make_jaxpr(answers("jit"))(np.ones(3, np.float32))
jax.make_jaxpr(jax.vmap(answers("vmap")))(np.ones((2, 3), np.float32))
jax.make_jaxpr(jax.grad(answers("grad")))(np.ones(3, np.float32))

info = jnp.__array_namespace_info__()
result["capabilities"] = repr(info.capabilities())
result["default_device"] = repr(info.default_device())
result["default_dtypes"] = repr(sorted(info.default_dtypes(device=None).items()))
result["devices"] = repr(info.devices())
for kind in (None, "bool", "signed integer", "unsigned integer", "integral", "real floating",
             "complex floating", "numeric", ("bool", "complex floating")):
    result[f"dtypes {kind}"] = repr(sorted(info.dtypes(kind=kind).items()))
try:
    info.dtypes(kind="floating")
except Exception as e:
    result["dtypes bad kind"] = type(e).__name__

def updated(dtype, value, method):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = jax.eval_shape(lambda x: getattr(x.at[1], method)(value), np.zeros(3, dtype))
            out = str(out.dtype)
        except Exception as e:
            out = type(e).__name__
    # the message up to the promotion mode; the rest is each library's advice
    return out, [(w.category.__name__, str(w.message).split("standard")[0]) for w in caught]

for dtype, value in [("int32", 1.5), ("int32", 3), ("int32", True), ("uint8", 300),
                     ("uint8", -1), ("bool", 2), ("float32", 1 + 2j),
                     ("int8", np.float32(1.5)), ("int8", np.int32(1)), ("float32", np.int32(1))]:
    for method in ("set", "add", "mul", "min", "max", "divide"):
        result[f"at {dtype} {value!r} {method}"] = updated(dtype, value, method)

x = np.ones((2, 3), np.float32)
bad_axes = {
    "sum": lambda: jnp.sum(np.ones(3), axis=2), "max": lambda: jnp.max(x, axis=-3),
    "prod": lambda: jnp.prod(x, axis=(0, 2)), "any": lambda: jnp.any(x, axis=2),
    "mean": lambda: jnp.mean(x, axis=2), "var": lambda: jnp.var(x, axis=2),
    "std": lambda: jnp.std(x, axis=-3), "x.mean": lambda: jnp.asarray(x).mean(axis=2),
    "argmax": lambda: jnp.argmax(x, axis=2), "argmin": lambda: jnp.argmin(x, axis=-3),
    "nanargmax": lambda: jnp.nanargmax(x, axis=2), "nanvar": lambda: jnp.nanvar(x, axis=2),
    "cumsum": lambda: jnp.cumsum(x, axis=2), "cumprod": lambda: jnp.cumprod(x, axis=-3),
    "cumulative_sum": lambda: jnp.cumulative_sum(x, axis=2),
    "median": lambda: jnp.median(x, axis=2), "average": lambda: jnp.average(x, axis=2),
    "logsumexp": lambda: jax.nn.logsumexp(x, axis=2), "sort": lambda: jnp.sort(x, axis=2),
    "swapaxes": lambda: jnp.swapaxes(x, 0, 3), "moveaxis": lambda: jnp.moveaxis(x, 0, -4),
    "split": lambda: jnp.split(x, 1, axis=2), "repeat": lambda: jnp.repeat(x, 2, axis=2),
    "repeat counts": lambda: jnp.repeat(x, np.array([1, 2]), axis=2),
    "linspace": lambda: jnp.linspace(np.zeros(2), 1, 3, axis=3),
    "geomspace": lambda: jnp.geomspace(np.ones(2), 2, 3, axis=3),
    "packbits": lambda: jnp.packbits(np.ones(3, np.uint8), axis=1),
    "unwrap": lambda: jnp.unwrap(x, axis=2), "fftshift": lambda: jnp.fft.fftshift(x, axes=2),
    "vecdot": lambda: jnp.vecdot(x, x, axis=2), "cross": lambda: jnp.cross(x, x, axis=2),
    "linalg.cross": lambda: jnp.linalg.cross(x, x, axis=2),
    "concatenate": lambda: jnp.concatenate([x, x], axis=2),
    "take": lambda: jnp.take(x, 0, axis=2), "flip": lambda: jnp.flip(x, axis=2),
}
for name, call in bad_axes.items():
    try:
        jax.eval_shape(call)
        result[f"axis {name}"] = "ok"
    except Exception as e:
        result[f"axis {name}"] = type(e).__qualname__
"""


@pytest.fixture(scope="module")
def answers():
    code = _CODE % {"members": TRACER_MEMBERS}
    return run_reference(code, library="plax"), run_reference(code)


@requires_jax
@pytest.mark.parametrize("group", ["jit ", "vmap ", "grad ", "capabilities", "default_",
                                   "devices", "dtypes ", "at ", "axis "])
def test_matches_jax(answers, group):
    mine, theirs = answers
    assert sorted(mine) == sorted(theirs)
    differing = {k: (mine[k], theirs[k]) for k in theirs
                 if k.startswith(group) and mine[k] != theirs[k]}
    assert not differing  # key: (plax, JAX)


@pytest.mark.parametrize("name", ["committed", "devices()", "tolist()", "traceback"])
def test_a_concrete_only_member_names_itself_and_the_shape(name):
    def probe(x):
        eval("x." + name)
    with pytest.raises(plax.errors.ConcretizationTypeError,
                       match=rf"`x\.{name.replace('(', '[(]').replace(')', '[)]')}` needs a "
                             r"concrete array, not a traced array with shape f32\[3\]"):
        plax.make_jaxpr(probe)(np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["sharding", "device", "block_until_ready"])
def test_an_unavailable_member_is_an_attribute_error_naming_it(name):
    def probe(x):
        assert not hasattr(x, name)
        getattr(x, name)
    with pytest.raises(AttributeError, match=f"The '{name}' attribute is not available on a "
                                             r"traced array with shape f32\[2\]"):
        plax.vmap(probe)(np.ones((3, 2), np.float32))


def test_an_outer_tracer_in_an_inner_trace_is_a_constant_not_a_concretization():
    """A 0-d tracer of an enclosing trace reaching a staging trace is captured as a
    constant (asking whether it holds shards must not concretize it)."""
    out = plax.grad(lambda x: plax.jit(lambda y: y * x)(2.0))(np.float32(3.0))
    assert float(out) == 2.0


def test_array_namespace_info_rejects_an_unknown_kind():
    info = jnp.__array_namespace_info__()
    with pytest.raises(KeyError, match="unknown kind 'floating'"):
        info.dtypes(kind="floating")
    assert info.dtypes(kind="real floating") == {"float32": np.dtype("float32")}


def test_an_axis_out_of_range_names_axis_and_rank():
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 1"):
        jnp.sum(jnp.ones(3), axis=2)
    with pytest.raises(IndexError, match="axis -3 is out of bounds for array of dimension 2"):
        jnp.argmax(jnp.ones((2, 3)), axis=-3)


def test_shape_dtype_struct_like_a_tracer_has_no_sharding():
    seen = []
    plax.make_jaxpr(lambda x: seen.append(plax.ShapeDtypeStruct.like(x)))(np.ones(2, np.int8))
    assert seen == [plax.ShapeDtypeStruct((2,), np.int8)]
