"""A JAX user's first mistakes raise JAX's exception classes, with the hints JAX's
messages give (the traced argument's name, `static_argnums`), compared with JAX run
in a subprocess; plus the names JAX programs use that plax lacked."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import plax
import pytest
from jax_reference import requires_jax, run_reference
from plax import numpy as jnp

CASES = {
    "zeros(n)": "jax.jit(lambda n: jnp.zeros(n))(3)",
    "zeros((n,))": "jax.jit(lambda n: jnp.zeros((n,)))(3)",
    "ones((2, n))": "jax.jit(lambda n: jnp.ones((2, n)))(3)",
    "reshape(n, -1)": "jax.jit(lambda x, n: x.reshape(n, -1))(jnp.ones(6), 2)",
    "arange(n)": "jax.jit(lambda n: jnp.arange(n))(3)",
    "arange(0, n)": "jax.jit(lambda n: jnp.arange(0, n))(3)",
    "device_put(x, 'cpu:0')": "jax.device_put(jnp.ones(2), 'cpu:0')",
    "arange(complex)": "jnp.arange(0, 2 + 1j)",
    # JAX's lax gives Python scalars their default dtype and takes no mixed dtypes
    "lax.add(f32, 1)": "jax.jit(lambda x: jax.lax.add(x, 1))(jnp.ones(2))",
    "lax.mul(i16, 1)": "jax.jit(lambda x: jax.lax.mul(x, 1))(jnp.ones(2, 'int16'))",
    "lax.sub(bf16, 1)": "jax.jit(lambda x: jax.lax.sub(x, 1))(jnp.ones(2, jnp.bfloat16))",
    "lax.pow(bf16, inf)": "jax.jit(lambda x: jax.lax.pow(x, float('inf')))(jnp.ones(2, "
                          "jnp.bfloat16))",
    "lax.add(f32, 1.0)": "jax.jit(lambda x: jax.lax.add(x, 1.0))(jnp.ones(2))",
    "lax.add(i32, 1)": "jax.jit(lambda x: jax.lax.add(x, 1))(jnp.ones(2, 'int32'))",
    # a traced axis (JAX's ConcretizationTypeError, wherever plax.numpy reads an axis)
    **{f"traced axis: {call}": f"jax.jit(lambda x, axis: {call})(jnp.ones((2, 3)), 0)"
       for call in ("jnp.sum(x, axis)", "x.min(axis)", "jnp.mean(x, axis)", "jnp.any(x, axis)",
                    "jnp.expand_dims(x, axis)", "jnp.squeeze(x[:1], axis)",
                    "jnp.roll(x, 1, axis)", "jnp.moveaxis(x, axis, 1)",
                    "jnp.split(x, 1, axis)", "jnp.repeat(x, 2, axis)",
                    "jnp.average(x, axis)", "jax.nn.softmax(x, axis)")},
}
# phrases both messages must contain
HINTS = {"zeros(n)": ["static_argnums", "argument n"], "zeros((n,))": ["static_argnums"],
         "ones((2, n))": ["static_argnums"], "reshape(n, -1)": ["static_argnums"],
         "arange(n)": ["'stop'", "argument n"], "arange(0, n)": ["'stop'"],
         "lax.add(f32, 1)": ["same dtypes, got float32, int32", "jnp.add"],
         "lax.sub(bf16, 1)": ["same dtypes, got bfloat16, int32", "jnp.subtract"],
         "traced axis: jnp.sum(x, axis)": ["argument axis"]}

_DRIVER = """
result = {}
for name, code in CASES.items():
    try:
        eval(code)
        result[name] = ["no error", ""]
    except Exception as e:
        result[name] = [type(e).__name__, str(e)]
"""


def _answers(library: str) -> dict:
    return run_reference(f"CASES = {CASES!r}\n" + _DRIVER, library=library)


@requires_jax
def test_errors_are_jaxs():
    theirs, mine = _answers("jax"), _answers("plax")
    for name in CASES:
        assert mine[name][0] == theirs[name][0], (name, mine[name], theirs[name])
        for phrase in HINTS.get(name, ()):
            assert phrase in theirs[name][1] and phrase in mine[name][1], (name, phrase,
                                                                          mine[name][1])


def test_traced_shape_names_the_argument_and_static_argnums():
    with pytest.raises(TypeError, match=r"static_argnums.*depends on the value of the "
                                        r"argument n"):
        plax.jit(lambda n: jnp.zeros(n))(3)
    assert plax.jit(lambda n: jnp.zeros(n), static_argnums=0)(3).shape == (3,)
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        jnp.zeros("abc")


def test_shape_dtype_struct_like_and_closed_jaxpr_literals():
    s = plax.ShapeDtypeStruct.like(np.ones((2, 3), np.int32))
    assert (s.shape, s.dtype, s.weak_type) == ((2, 3), np.dtype(np.int32), False)
    assert plax.ShapeDtypeStruct.like(2.0).weak_type
    assert plax.ShapeDtypeStruct.like(s) == s
    closed = plax.make_jaxpr(lambda x: x + np.arange(3, dtype=np.float32))(np.ones(3, "f4"))
    assert closed.literals is closed.consts and len(closed.literals) == 1
    assert closed.invars == closed.jaxpr.invars and closed.outvars == closed.jaxpr.outvars


def test_platform_name_chooses_the_default_backend():
    code = textwrap.dedent("""
        import plax
        plax.config.update("jax_platform_name", "cpu")
        print(plax.default_backend(), plax.devices()[0].platform)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["cpu", "cpu"]
    bad = subprocess.run([sys.executable, "-c", code.replace('"cpu"', '"nosuch"')],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "Unknown backend 'nosuch'" in bad.stderr
