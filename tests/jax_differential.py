"""Run one test body with JAX in a subprocess, where JAX's behaviour is the
specification (plax never imports JAX; JAX never enters the test process).

A body is Python source that uses `lib` (`plax` or `jax`), `lax`, `jnp` and the
`inputs` dict of NumPy arrays, and fills `results` (a dict of arrays). `run_body`
runs it here with plax, `run_in_jax` with JAX in a fresh process.

A driver is Python source defining `run(programs)`, which maps a JSON-able table of
programs to JSON-able answers (types, layouts, values or error classes);
`run_driver_here` runs it with plax's names, `run_driver_in_jax` with JAX's.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from typing import Callable

import numpy as np
import pytest

requires_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                  reason="JAX is not installed")

_RUNNER = """
import sys
import numpy as np
lib = __import__(sys.argv[1])
lax = __import__(sys.argv[1] + ".lax", fromlist=["lax"])
jnp = __import__(sys.argv[1] + ".numpy", fromlist=["numpy"])
with np.load(sys.argv[2]) as data:
    inputs = dict(data)
results = {}
exec(open(sys.argv[3]).read())
np.savez(sys.argv[4], **{k: np.asarray(v) for k, v in results.items()})
"""


def run_body(body: str, inputs: dict) -> dict:
    """The body's results computed with plax, in this process."""
    import plax
    from plax import lax
    from plax import numpy as jnp
    scope = dict(lib=plax, lax=lax, jnp=jnp, inputs=dict(inputs), results={}, np=np)
    exec(textwrap.dedent(body), scope)
    return {k: np.asarray(v) for k, v in scope["results"].items()}


def run_in_jax(body: str, inputs: dict) -> dict:
    """The body's results computed with JAX, in a subprocess."""
    return start_in_jax(body, inputs)()


def start_in_jax(body: str, inputs: dict) -> Callable[[], dict]:
    """Start computing the body's results with JAX in a subprocess; the function
    returned waits for them (so plax's side can run meanwhile)."""
    tmp = tempfile.TemporaryDirectory()
    paths = [os.path.join(tmp.name, name) for name in ("in.npz", "body.py", "out.npz",
                                                       "runner.py")]
    np.savez(paths[0], **inputs)
    with open(paths[1], "w") as f:
        f.write(textwrap.dedent(body))
    with open(paths[3], "w") as f:
        f.write(_RUNNER)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    log = open(os.path.join(tmp.name, "log"), "w+")  # a file, not a pipe nobody reads yet
    proc = subprocess.Popen([sys.executable, paths[3], "jax", paths[0], paths[1], paths[2]],
                            stdout=log, stderr=subprocess.STDOUT, env=env)

    def results() -> dict:
        with tmp, log:
            if proc.wait():
                log.seek(0)
                raise AssertionError(f"the body failed under JAX:\n{log.read()[-3000:]}")
            with np.load(paths[2]) as data:
                return dict(data)
    return results


def assert_same_as_jax(body: str, inputs: dict, rtol=1e-5, atol=1e-5,
                       tolerances: dict | None = None) -> None:
    """Equal keys, shapes, dtypes, NaN positions and values within `rtol`/`atol`, or
    within `tolerances[key]` = (rtol, atol) for the keys it names."""
    mine, theirs = run_body(body, inputs), run_in_jax(body, inputs)
    assert sorted(mine) == sorted(theirs)
    tolerances = tolerances or {}
    for key in mine:
        assert mine[key].shape == theirs[key].shape, (key, mine[key].shape, theirs[key].shape)
        assert mine[key].dtype == theirs[key].dtype, (key, mine[key].dtype, theirs[key].dtype)
        r, a = tolerances.get(key, (rtol, atol))
        np.testing.assert_allclose(mine[key], theirs[key], rtol=r, atol=a, err_msg=key)


def assert_same_bits_as_jax(body: str, inputs: dict) -> None:
    """Equal keys, and for each result the same dtype, shape and bytes (so the same
    bits, NaN payloads and signed zeros; error class names compare as strings)."""
    mine, theirs = run_body(body, inputs), run_in_jax(body, inputs)
    assert sorted(mine) == sorted(theirs), set(mine) ^ set(theirs)
    bad = [f"{k}: plax {mine[k]!r}, jax {theirs[k]!r}" for k in sorted(mine)
           if (mine[k].dtype, mine[k].shape) != (theirs[k].dtype, theirs[k].shape)
           or mine[k].tobytes() != theirs[k].tobytes()]
    assert not bad, "differences from JAX:\n" + "\n".join(bad)


def start_driver_in_jax(jax_side: str, programs: dict) -> Callable[[], dict]:
    """Start `jax_side` (a driver after JAX's imports, printing
    `json.dumps(run(json.loads(sys.argv[1])))`) on `programs` in a subprocess; the
    function returned waits for its answers (so plax's side can run meanwhile)."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(jax_side),
                             json.dumps(programs)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    def answers() -> dict:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        return json.loads(out.strip().splitlines()[-1])
    return answers


def run_driver_in_jax(jax_side: str, programs: dict) -> dict:
    """The answers of `jax_side` for `programs` (see `start_driver_in_jax`)."""
    return start_driver_in_jax(jax_side, programs)()


def run_driver_here(driver: str, programs: dict, **names) -> dict:
    """The answers of `driver` for `programs` with plax, in this process; `names` adds
    to (or replaces) the plax names the driver sees."""
    import plax
    from plax import lax
    from plax import numpy as jnp
    from plax.sharding import NamedSharding, PartitionSpec
    scope = {**dict(np=np, jnp=jnp, lax=lax, jit=plax.jit, device_put=plax.device_put,
                    grad=plax.grad, jvp=plax.jvp, tree_leaves=plax.tree_util.tree_leaves,
                    make_mesh=plax.make_mesh, typeof=plax.typeof,
                    NamedSharding=NamedSharding, P=PartitionSpec,
                    reshard=plax.sharding.reshard), **names}
    exec(textwrap.dedent(driver), scope)
    return scope["run"](json.loads(json.dumps(programs)))
