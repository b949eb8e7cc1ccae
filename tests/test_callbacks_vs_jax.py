"""Where JAX's behaviour is the specification: what `debug.print` writes for values of
every kind and format, and the shapes a `pure_callback` sees under each
`vmap_method`, compared with JAX 0.10.2 run in a subprocess."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import requires_jax, run_body, run_in_jax

PRINTS = r"""
import contextlib, io
buffer = io.StringIO()
x = inputs["x"]
with contextlib.redirect_stdout(buffer):
    def f(x, i, b):
        lib.debug.print("{} {x} {i} {b}", x[0], x=x, i=i, b=b, ordered=True)
        lib.debug.print("{:.3f} {:>8} {!r:.4}|{n}", x[1], i, x[0], n=None, ordered=True)
        lib.debug.print("scalars {} {} {}", x.sum(), i * 2, jnp.float32(0.1), ordered=True)
        lib.debug.print("{}", jnp.arange(12).reshape(3, 4), ordered=True)
        lib.debug.print("{}", x.astype(jnp.bfloat16) * 0 + 1.5, ordered=True)
        lib.debug.print("{}", jnp.zeros((0, 2)), ordered=True)
        return x
    f(x, np.int32(3), np.bool_(True))
    lib.jit(f)(x, np.int32(3), np.bool_(True))
    lib.vmap(lambda v: lib.debug.print("row {}", v, ordered=True))(x.reshape(2, 2))
    lib.effects_barrier()
results["text"] = np.array(buffer.getvalue())
"""

SHAPES = r"""
seen = []
def host(x, y):
    seen.append(np.shape(x) + (-1,) + np.shape(y))
    x, y = np.asarray(x), np.asarray(y)  # batch axes lead: align y's with x's
    return x * 2 + y.reshape(y.shape + (1,) * (x.ndim - y.ndim))
def f(x, y):
    return lib.pure_callback(host, lib.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                             vmap_method=METHOD)
results["out"] = lib.jit(lib.vmap(f, in_axes=(0, None)))(inputs["x"], inputs["y"])
if NESTED:
    results["out2"] = lib.vmap(lib.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(
        inputs["x"][0], inputs["x"][:, 0])
results["seen"] = np.array([s + (-2,) * (8 - len(s)) for s in seen])
"""


@requires_jax
def test_print_formatting_matches_jax():
    inputs = {"x": np.array([0.25, -1.5, 3.0, 1e-8], np.float32)}
    mine, theirs = run_body(PRINTS, inputs), run_in_jax(PRINTS, inputs)
    assert str(mine["text"]).splitlines() == str(theirs["text"]).splitlines()


@requires_jax
@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_pure_callback_vmap_semantics_match_jax(method):
    # legacy_vectorized hands an unbatched operand over as it is: nesting it would
    # need a callback that knows which operands are batched
    body = SHAPES.replace("METHOD", repr(method)).replace(
        "NESTED", str(method != "legacy_vectorized"))
    inputs = {"x": np.arange(6, dtype=np.float32).reshape(3, 2), "y": np.float32(1)}
    mine, theirs = run_body(body, inputs), run_in_jax(body, inputs)
    assert sorted(mine) == sorted(theirs)
    for key in mine:
        np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)
