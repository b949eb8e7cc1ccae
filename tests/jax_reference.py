"""Running JAX as the reference, in a subprocess (plax never shares a process with it
in the tests that compare them): a test sends a script that leaves a JSON-able
`result`, and gets that value back. Tests using it are skipped without JAX."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

requires_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                  reason="JAX is not installed")

_EPILOGUE = "\nimport json as _json\nprint('@@result@@' + _json.dumps(result))\n"


def run_reference(code: str, library: str = "jax", timeout: float = 300):
    """Runs `code` (which assigns `result`) with `library` imported as `jax` and
    `library.numpy` as `jnp`; returns `result`. The subprocess inherits XLA_FLAGS."""
    prologue = (f"import numpy as np\nimport {library} as jax\nimport {library}.numpy as jnp\n")
    script = prologue + textwrap.dedent(code) + _EPILOGUE
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"the {library} script failed:\n{proc.stderr[-4000:]}")
    line = next(line for line in proc.stdout.splitlines() if line.startswith("@@result@@"))
    return json.loads(line[len("@@result@@"):])
