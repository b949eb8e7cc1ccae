"""float0 values (the tangents of integers and bools) through jit, device_put and
jnp.asarray, compared with JAX 0.10.2: on devices a float0 is bools (false of its
shape), and what comes back to the user is a NumPy float0 array of zeros."""
import numpy as np
import pytest

import plax
from jax_reference import requires_jax, run_reference
from plax import lax

_FLOAT0_PROGRAMS = """
lax = jax.lax
f0 = jax.dtypes.float0
NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
x = np.zeros((3,), f0)

def leaf(v):
    # where it lives (host NumPy, or a device Array), dtype, shape, values
    dt = "float0" if v.dtype == f0 else str(v.dtype)
    values = v.nbytes if dt == "float0" else np.asarray(v).tolist()
    return ["host" if isinstance(v, np.ndarray) else "device", dt, list(v.shape), values]

def outcome(make):
    try:
        return [leaf(v) for v in jax.tree.leaves(make())]
    except Exception as e:  # the class, and for the transfer guard what it names
        return [type(e).__name__, str(e).split(", dst_sharding")[0]
                if "transfer" in str(e) else ""]

def guarded(make):
    def run():
        with jax.transfer_guard("disallow"):
            return make()
    return run

int_grad = jax.grad(lambda a, i: a * 2.0, argnums=(0, 1), allow_int=True)
g = int_grad(1.0, 3)
kept = jax.jit(lambda a, b: b + a.astype(jnp.float32))  # the float0 argument is used
mesh = jax.make_mesh((2,), ("x",))
cases = {
    "jit_identity": lambda: jax.jit(lambda a: a)(x),
    "jit_unused_float0": lambda: jax.jit(lambda a, b: b * 2)(x, 1.0),
    "jit_called_again": lambda: [kept(np.zeros((2,), f0), 1.0) for _ in range(3)],
    "jit_donated": lambda: jax.jit(lambda a, b: (a, b + 1), donate_argnums=(0, 1))(
        x, jnp.ones(2)),
    "device_put": lambda: jax.device_put(x),
    "device_put_tree": lambda: jax.device_put({"a": x, "b": np.ones(2, np.float32)},
                                              jax.devices()[1]),
    "device_put_sharded": lambda: jax.device_put(np.zeros((4, 2), f0),
                                                 NamedSharding(mesh, P("x"))),
    "asarray": lambda: jnp.asarray(x),
    "array": lambda: jnp.array(np.zeros((2, 2), f0)),
    "grad": lambda: g,
    "jit_of_a_grad": lambda: jax.jit(lambda t: t[1])(g),
    "jit_of_grads": lambda: jax.jit(lambda t: t)(g),
    "jit_grad": lambda: jax.jit(int_grad)(1.0, 3),
    "jit_vmap_grad": lambda: jax.jit(jax.vmap(int_grad))(jnp.ones(2), jnp.arange(2)),
    "jit_jvp": lambda: jax.jit(lambda a, t: jax.jvp(lambda q: q * 2, (a,), (t,)))(
        3, np.zeros((), f0)),
    "jit_update": lambda: jax.jit(lambda p, d: jax.tree.map(
        lambda a, b: a if b.dtype == f0 else a - 0.1 * b, p, d))((1.0, 3), g),
    "jit_astype": lambda: jax.jit(lambda a, v: (a.astype(jnp.int32),
                                                lax.convert_element_type(v, f0)))(
        x, jnp.ones(2)),
    "astype": lambda: jnp.astype(x, jnp.float32),
    "jit_scan_carry": lambda: jax.jit(lambda a: lax.scan(lambda c, _: (c, c), a, None,
                                                         length=2))(x),
    "jit_index_reshape": lambda: jax.jit(lambda a: (a[1:], a.reshape(3, 1)))(x),
    "pmap": lambda: jax.pmap(lambda a: a)(np.zeros((2, 3), f0)),
    "guarded_jit": guarded(lambda: jax.jit(lambda a: a)(x)),
    "guarded_asarray": guarded(lambda: jnp.asarray(x)),
    "guarded_device_put": guarded(lambda: jax.device_put(x)),
    # bad uses: no arithmetic on float0, and no float0 primal to differentiate
    "add_in_jit": lambda: jax.jit(lambda a: a + 1)(x),
    "sin_in_jit": lambda: jax.jit(jnp.sin)(x),
    "lax_add": lambda: lax.add(x, x),
    "grad_of_float0": lambda: jax.grad(lambda a: a.astype(jnp.float32).sum(),
                                       allow_int=True)(x),
}
result = {name: outcome(make) for name, make in cases.items()}
result["typeof"] = str(jax.typeof(x))
"""


@requires_jax
def test_float0_through_jit_device_put_and_asarray_as_in_jax():
    mine = run_reference(_FLOAT0_PROGRAMS, library="plax")
    assert mine["jit_identity"] == [["host", "float0", [3], 0]]
    assert mine == run_reference(_FLOAT0_PROGRAMS)


def test_float0_arguments_are_placed_as_bools_and_results_are_numpy_zeros():
    """What the differential test cannot see: no device Array has dtype float0 (the
    module takes booleans), and the transfer guard sees the booleans placed."""
    x = np.zeros((2, 3), plax.dtypes.float0)
    lowered = plax.jit(lambda a: a).lower(x)
    assert "tensor<2x3xi1>" in lowered.as_text()
    out = lowered.compile()(x)
    assert type(out) is np.ndarray and out.dtype == plax.dtypes.float0 and out.shape == (2, 3)
    with plax.transfer_guard("disallow"), pytest.raises(plax.errors.JaxRuntimeError,
                                                         match=r"bool\[2,3\]"):
        plax.numpy.asarray(x)


def test_float0_converts_to_and_from_zeros():
    """float0's one value is zero: converting it gives zeros of any dtype, and a value
    converted to float0 and back is zeros too (JAX's lowering leaks the booleans there)."""
    f0 = plax.dtypes.float0
    back = plax.jit(lambda v: lax.convert_element_type(lax.convert_element_type(v, f0),
                                                       np.float32))
    assert back(np.arange(3.0, dtype=np.float32)).tolist() == [0.0, 0.0, 0.0]
    assert lax.convert_element_type(np.zeros(2, f0), bool).tolist() == [False, False]
    with pytest.raises(TypeError, match="dtype float0 is not a bool or numeric dtype: "
                                        "float0 arrays"):
        plax.numpy.negative(np.zeros(2, f0))
