"""plax.flatten_util.ravel_pytree: values and dtypes as JAX's, the round trip, and
its use under jit, grad and vmap."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.flatten_util import ravel_pytree

# name -> a pytree's source over `jnp` and `np` (evaluated by plax and by JAX)
TREES = {
    "mixed_dtypes": "{'a': jnp.ones((2, 3)), 'b': (jnp.arange(3), 2.0), "
                    "'c': jnp.zeros((), jnp.float16)}",
    "python_scalars": "{'x': 1, 'y': 2.5}",
    "small_ints": "(np.ones(2, np.int8), np.full(2, 3, np.uint8))",
    "half_floats": "[jnp.ones(2, jnp.bfloat16), jnp.full(2, 2, jnp.float16)]",
    "bools_and_ints": "[np.array([True, False]), 7]",
    "complex_leaf": "(jnp.ones(2), jnp.array([1 + 2j]))",
    "empty": "[]",
}


def _tree(name):
    return eval(TREES[name], {"jnp": jnp, "np": np})


@pytest.mark.parametrize("name", sorted(TREES))
def test_round_trip(name):
    tree = _tree(name)
    flat, unravel = ravel_pytree(tree)
    assert flat.ndim == 1
    back = unravel(flat)
    assert plax.tree.structure(back) == plax.tree.structure(tree)
    for got, want in zip(plax.tree.leaves(back), plax.tree.leaves(tree)):
        assert got.dtype == jnp.asarray(want).dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


_JAX_FLAT = """
    import json, sys
    import numpy as np
    import jax, jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    out = {}
    for name, src in json.loads(sys.argv[1]).items():
        flat, _ = ravel_pytree(eval(src, {"jnp": jnp, "np": np}))
        out[name] = [str(flat.dtype), np.asarray(flat).astype(complex).tolist()]
    print(json.dumps({k: [d, [[v.real, v.imag] for v in vals]] for k, (d, vals) in out.items()}))
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_flat_vectors_are_jaxs():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_FLAT), json.dumps(TREES)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    jax_flat = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in TREES:
        flat, _ = ravel_pytree(_tree(name))
        dtype, values = jax_flat[name]
        assert str(flat.dtype) == dtype, name
        np.testing.assert_array_equal(np.asarray(flat).astype(complex),
                                      [complex(re, im) for re, im in values])


def test_under_jit_grad_and_vmap():
    params = {"w": jnp.ones((2, 3)), "b": jnp.arange(3.0), "steps": jnp.array(4)}
    flat, unravel = ravel_pytree(params)
    loss = lambda v: (unravel(v)["w"] ** 2).sum() + unravel(v)["b"].sum()
    # (dict leaves in key order: b, steps, w)
    np.testing.assert_array_equal(plax.grad(loss)(flat), [1.0] * 3 + [0.0] + [2.0] * 6)
    np.testing.assert_array_equal(plax.jit(lambda t: ravel_pytree(t)[0])(params), flat)
    batch = jnp.stack([flat, flat + 1])
    np.testing.assert_array_equal(plax.vmap(lambda v: unravel(v)["b"])(batch),
                                  [[0, 1, 2], [1, 2, 3]])


def test_unravel_checks_its_argument():
    _, unravel = ravel_pytree({"a": jnp.ones((2, 3)), "n": jnp.arange(3)})
    with pytest.raises(ValueError, match=r"given array of shape \(5,\), but expected shape "
                                         r"\(9,\)"):
        unravel(jnp.zeros(5))
    with pytest.raises(ValueError, match=r"shape \(9, 1\)"):
        unravel(jnp.zeros((9, 1)))
    with pytest.raises(TypeError, match="given array of dtype int32, but expected dtype "
                                        "float32"):
        unravel(jnp.zeros(9, jnp.int32))
