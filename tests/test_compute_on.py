"""plax.experimental.compute_on: the compute-type attributes on lowered ops against
JAX's (JAX in one subprocess), values, and JAX's errors for bad compute types."""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental.compute_on import compute_on
from tests.jax_differential import requires_jax, run_driver_here, start_driver_in_jax

_DRIVER = r'''
import re

def tagged_ops(text):
    ops = []
    for line in text.splitlines():
        m = re.search(r"= (?:stablehlo\.([a-z_]+)|(call) @)", line)
        if m:
            attrs = re.search(r"mhlo\.frontend_attributes = (\{[^}]*\})", line)
            ops.append((m.group(1) or m.group(2)) + (attrs.group(1) if attrs else ""))
    return ops

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

def run(programs):
    x = jnp.ones((2,), jnp.float32)
    out = {name: tagged_ops(jit(globals()[name]).lower(x).as_text()) for name in programs}
    out["values"] = [float(v) for v in jit(calls_on_host)(x)]
    out["errors"] = errors()
    return out
'''
PROGRAMS = ["calls_on_host", "block", "innermost_wins", "stream", "with_metadata"]


@pytest.fixture(scope="module")
def jax_answers():
    return start_driver_in_jax(
        "import json, sys\nimport jax.numpy as jnp\nfrom jax import jit\n"
        "from jax.experimental.compute_on import compute_on\n"
        "from jax.experimental.xla_metadata import set_xla_metadata\n" + _DRIVER
        + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", PROGRAMS)()


@requires_jax
def test_lowered_compute_types_values_and_errors_match_jax(jax_answers):
    from plax.experimental.xla_metadata import set_xla_metadata
    got = run_driver_here(_DRIVER, PROGRAMS, compute_on=compute_on,
                          set_xla_metadata=set_xla_metadata)
    assert got == jax_answers
    assert got["block"][0] == 'sine{_xla_compute_type = "host"}'


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
