"""plax and JAX in one process (DESIGN.md §9): neither breaks the other.

plax never patches jaxlib's classes, so importing JAX before or after plax leaves
both computing correctly. Skipped where JAX is not installed.
"""
import importlib.util
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")

_WORKLOAD = """
    import numpy as np
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    expected = np.tanh(x @ w).sum(axis=1)
    m = (w @ w.T + 3 * np.eye(3)).astype(np.float32)  # both register jaxlib's LAPACK kernels
    expected_solve = np.linalg.solve(m, x.T)

    def run_plax():
        import plax, plax.numpy as pnp
        out = plax.jit(lambda a, b: pnp.tanh(a @ b).sum(axis=1))(x, w)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)
        assert type(out).__module__.startswith("plax"), type(out)
        np.testing.assert_allclose(np.asarray(pnp.linalg.solve(m, x.T)), expected_solve,
                                   rtol=1e-5)
        np.testing.assert_allclose(np.asarray(pnp.linalg.eigvalsh(m)), np.linalg.eigvalsh(m),
                                   rtol=1e-5)

    def run_jax():
        import jax, jax.numpy as jnp
        out = jax.jit(lambda a, b: jnp.tanh(a @ b).sum(axis=1))(x, w)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)
        assert isinstance(out, jax.Array)
        np.testing.assert_allclose(np.asarray(jnp.linalg.solve(m, x.T)), expected_solve,
                                   rtol=1e-5)
"""


@pytest.mark.parametrize("order", ["plax_first", "jax_first"])
def test_plax_and_jax_in_one_process(order):
    calls = ("run_plax(); run_jax(); run_plax(); run_jax()" if order == "plax_first"
             else "run_jax(); run_plax(); run_jax(); run_plax()")
    code = textwrap.dedent(_WORKLOAD) + calls + "\nprint('both ok')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "both ok" in proc.stdout
