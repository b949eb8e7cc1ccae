"""plax.experimental.compute_on: the compute-type attributes on lowered ops against
JAX's (JAX in one subprocess), values, and JAX's errors for bad compute types."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental.compute_on import compute_on, compute_on2
from tests.frontend_attributes_driver import TAGGED_OPS
from tests.jax_differential import requires_jax, run_driver_here, start_driver_in_jax

_DRIVER = TAGGED_OPS + r'''

@compute_on("device_host")
@jit
def on_host(x):
    return jnp.cos(x) * 2

def calls_on_host(x):
    return on_host(x) + 1

def block(x):
    with compute_on("device_host"):
        return jnp.sin(x) + 1

def innermost_wins(x):
    with compute_on("device_host"):
        y = jnp.sin(x)
        with compute_on("device"):
            return y + 1

def stream(x):
    with compute_on("gpu_stream:1"):
        return x + 1

def with_metadata(x):
    with set_xla_metadata(m="1"), compute_on("device_host"):
        return jnp.sin(x)

on2 = compute_on2(lambda x: jnp.sin(x) * 2, compute_type="device_host",
                  out_memory_spaces=Space.Device)

@partial(compute_on2, compute_type="device", out_memory_spaces=Space.Device,
         compiler_options={"a": 1})
def on2_options(x):
    return x * 2, x + 1

def on2_nested(x):
    return compute_on2(lambda x: on2(x) + 1, compute_type="device",
                       out_memory_spaces=Space.Device)(x)

def errors():
    out = []
    for bad in ["foo", 3, "gpu"]:
        try:
            with compute_on(bad):
                pass
            out.append("ok")
        except Exception as err:
            out.append(f"{type(err).__name__}: {err}")
    return out

def error(thunk):
    try:
        thunk()
        return "ok"
    except Exception as err:
        return f"{type(err).__name__}: {err}"

def run(programs):
    x = jnp.ones((2,), jnp.float32)
    out = {name: tagged_ops(jit(globals()[name]).lower(x).as_text()) for name in programs}
    out["values"] = [[float(v) for v in jit(calls_on_host)(x)],
                     [float(v) for v in on2(x)],
                     [float(v) for v in grad(lambda x: on2(x).sum())(x)],
                     [[float(v) for v in row] for row in vmap(on2)(jnp.ones((3, 2)))]]
    # Host computations in a module for another platform take the CPU lowering rules.
    cholesky_on_host = compute_on("device_host")(jnp.linalg.cholesky)
    out["host_rules"] = re.findall(r"custom_call @(\w+)", export.export(
        jit(cholesky_on_host), platforms=("cuda",))(jnp.eye(2)).mlir_module())
    out["errors"] = errors()
    out["errors"].append(error(lambda: jit(on2_nested).lower(x)))
    out["errors"].append(error(lambda: compute_on2(jnp.sin, compute_type="cpu",
                                                   out_memory_spaces=Space.Device)))
    return out
'''
PROGRAMS = ["calls_on_host", "block", "innermost_wins", "stream", "with_metadata", "on2",
            "on2_options"]


@pytest.fixture(scope="module")
def jax_answers():
    return start_driver_in_jax(
        "import json, sys\nfrom functools import partial\nimport jax.numpy as jnp\n"
        "from jax import export, grad, jit, vmap\nimport jax\nSpace = jax.memory.Space\n"
        "from jax.experimental.compute_on import compute_on, compute_on2\n"
        "from jax.experimental.xla_metadata import set_xla_metadata\n" + _DRIVER
        + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", PROGRAMS)()


@requires_jax
def test_lowered_compute_types_values_and_errors_match_jax(jax_answers):
    from plax.experimental.xla_metadata import set_xla_metadata
    got = run_driver_here(_DRIVER, PROGRAMS, compute_on=compute_on, compute_on2=compute_on2,
                          set_xla_metadata=set_xla_metadata, Space=plax.memory.Space,
                          vmap=plax.vmap, partial=functools.partial, export=plax.export)
    assert got == jax_answers
    assert got["block"][0] == 'sine{_xla_compute_type = "host"}'
    assert got["host_rules"] == ["lapack_spotrf_ffi"]


def test_eager_operations_under_a_compute_type():
    x = jnp.arange(3.0, dtype=jnp.float32)
    with compute_on("device_host"):
        np.testing.assert_allclose(jnp.sin(x) * 2, 2 * np.sin(np.arange(3.0)), rtol=1e-6)


def test_bad_compute_types_raise_jaxs_errors():
    with pytest.raises(TypeError, match="must be a string"):
        with compute_on(None):
            pass
    with pytest.raises(ValueError, match="Invalid compute type host"):
        with compute_on("host"):
            pass


def test_compute_on2_refuses_results_in_host_memory_and_bad_spaces():
    x = jnp.ones((2,), jnp.float32)
    host = compute_on2(jnp.sin, compute_type="device_host",
                       out_memory_spaces=plax.memory.Space.Host)
    with pytest.raises(NotImplementedError, match="memory space"):
        host(x)
    with pytest.raises(TypeError, match="out_memory_spaces"):
        compute_on2(jnp.sin, compute_type="device", out_memory_spaces=3)(x)
    with pytest.raises(ValueError, match="tree prefix"):
        compute_on2(jnp.sin, compute_type="device",
                    out_memory_spaces=(plax.memory.Space.Device,) * 2)(x)
