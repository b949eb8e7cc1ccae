"""Run one test body with JAX in a subprocess, where JAX's behaviour is the
specification (plax never imports JAX; JAX never enters the test process).

A body is Python source that uses `lib` (`plax` or `jax`), `lax`, `jnp` and the
`inputs` dict of NumPy arrays, and fills `results` (a dict of arrays). `run_body`
runs it here with plax, `run_in_jax` with JAX in a fresh process.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap

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
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, name) for name in ("in.npz", "body.py", "out.npz",
                                                      "runner.py")]
        np.savez(paths[0], **inputs)
        with open(paths[1], "w") as f:
            f.write(textwrap.dedent(body))
        with open(paths[3], "w") as f:
            f.write(_RUNNER)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        proc = subprocess.run([sys.executable, paths[3], "jax", paths[0], paths[1], paths[2]],
                              capture_output=True, text=True, env=env)
        if proc.returncode:
            raise AssertionError(f"the body failed under JAX:\n{proc.stderr[-3000:]}")
        with np.load(paths[2]) as data:
            return dict(data)


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
