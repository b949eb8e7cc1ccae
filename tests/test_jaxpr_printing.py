"""Printed Jaxprs are JAX's, character for character: the table of programs in
tests/jaxpr_print_cases.py (ops, Python scalars, shapes, indexing, products, lax,
control flow, transforms, custom rules, creation, random, special functions) printed
by `str(make_jaxpr(f)(*args))` under plax here and under JAX 0.10.2 in one subprocess.

Each case prints the same, or is listed in `KNOWN_DIFFERENCES` under the reason its
equations differ (the printer is not the cause: those are differences in what is
traced). The list is exact both ways: a case that starts to match must leave it.
"""
from __future__ import annotations

import difflib
import os

import numpy as np
import plax
import pytest
from jax_reference import requires_jax, run_reference
from plax import numpy as jnp
from plax.extend.core import ClosedJaxpr, Literal, Var

import jaxpr_print_cases

TESTS = os.path.dirname(os.path.abspath(__file__))

KNOWN_DIFFERENCES = {
    ("gcd's loop step leaves out JAX's reordering of each pair (larger first), with "
     "which JAX's loop never ends where abs overflows (gcd(-2**31, -3) hangs in JAX)"): [
        "int jnp.gcd", "int jnp.gcd(x, 1)",
    ],
    ("convolution_matrix gathers from the padded vector; JAX's pads, slices and builds a "
     "Toeplitz matrix (vectorized conv_general_dilated_patches)"): [
        "sla.convolution_matrix",
    ],
    ("expm is JAX's formulation but for two of its calls: digitize's searchsorted is "
     "plax's own bisection (JAX's expands its SearchSorted primitive: a jitted scan on "
     "unsigned bounds) and solve is plax's LU formulation (above)"): [
        "sla.expm", "sla.expm_frechet",
    ],
}


def _printed(lib) -> dict:
    out = {}
    for name, (fun, args) in jaxpr_print_cases.cases(lib).items():
        try:
            out[name] = str(lib.make_jaxpr(fun)(*args))
        except Exception as e:  # noqa: BLE001 - an error is an answer to compare
            out[name] = f"{type(e).__name__}: {e}"
    return out


_JAX_SIDE = f"""
import sys
sys.path.insert(0, {TESTS!r})
import jaxpr_print_cases
result = {{}}
for name, (fun, args) in jaxpr_print_cases.cases(jax).items():
    try:
        result[name] = str(jax.make_jaxpr(fun)(*args))
    except Exception as e:
        result[name] = f"{{type(e).__name__}}: {{e}}"
"""


@requires_jax
def test_printed_jaxprs_are_jaxs():
    theirs = run_reference(_JAX_SIDE)
    mine = _printed(plax)
    assert sorted(mine) == sorted(theirs)
    assert len(mine) >= 300
    known = {name: reason for reason, names in KNOWN_DIFFERENCES.items() for name in names}
    assert len(known) == sum(map(len, KNOWN_DIFFERENCES.values())), "a case listed twice"
    assert set(known) <= set(mine), set(known) - set(mine)
    differ = {name for name in mine if mine[name] != theirs[name]}
    report = [f"{name}:\n" + "\n".join(difflib.unified_diff(
        theirs[name].splitlines(), mine[name].splitlines(), "jax", "plax", lineterm="", n=1))
        for name in sorted(differ - set(known))]
    assert not report, "printed unlike JAX's:\n" + "\n".join(report)
    now_same = sorted(set(known) - differ)
    assert not now_same, f"these print as JAX's now: take them off KNOWN_DIFFERENCES {now_same}"


def test_jaxpr_parts_for_custom_interpreters():
    """What an interpreter walking a Jaxpr reads: `eqn.primitive.name` (JAX's short
    names), `eqn.params`, `eqn.invars` of `Var`s and `Literal`s (`.val`, `.aval`)."""
    closed = plax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x) * 2.0 + 1, axis=0))(
        np.ones((2, 3), np.float32))
    assert [e.primitive.name for e in closed.eqns] == ["sin", "mul", "add", "reduce_sum"]
    mul = closed.eqns[1]
    assert isinstance(mul.invars[0], Var) and isinstance(mul.invars[1], Literal)
    assert mul.invars[1].val == 2.0 and str(mul.invars[1].aval) in ("f32[]", "float32[]",
                                                                     "~float32[]")
    assert repr(mul.invars[1]) == "Literal(2.0)"
    assert closed.eqns[3].params["axes"] == (0,)

    def evaluate(jaxpr, *args):  # the interpreter a JAX tutorial writes
        env = dict(zip(jaxpr.invars, args))
        read = lambda a: a.val if isinstance(a, Literal) else env[a]  # noqa: E731
        for eqn in jaxpr.eqns:
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            env.update(zip(eqn.outvars, outs))
        return [read(v) for v in jaxpr.outvars]

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(evaluate(closed.jaxpr, x)[0],
                               np.sum(np.sin(x) * 2 + 1, axis=0), rtol=1e-6)
    assert isinstance(closed, ClosedJaxpr)


def test_long_params_wrap_one_a_line_as_jaxs():
    text = str(plax.make_jaxpr(lambda x: jnp.dot(x, x))(np.ones((2, 2), np.float32)))
    assert text == ("{ lambda ; a:f32[2,2]. let\n"
                    "    b:f32[2,2] = dot_general[\n"
                    "      dimension_numbers=(([1], [0]), ([], []))\n"
                    "      preferred_element_type=float32\n"
                    "    ] a a\n"
                    "  in (b,) }")
    # a 0-d constant is a literal, unused top-level results print as `_`
    text = str(plax.make_jaxpr(lambda x: (jnp.sin(x), x * np.float32(3))[1])(np.float32(1)))
    assert text == ("{ lambda ; a:f32[]. let _:f32[] = sin a; b:f32[] = mul a 3.0:f32[] "
                    "in (b,) }")


@pytest.mark.parametrize("n_eqns, shared", [(3, False), (11, True)])
def test_large_or_repeated_inner_jaxprs_print_once(n_eqns, shared):
    """JAX's rule: an inner Jaxpr of more than 10 equations, or one used twice, is
    printed once, before the program, as `let name = { ... } in`."""
    def body(y):
        for _ in range(n_eqns):
            y = jnp.sin(y)
        return y
    inner = plax.jit(body)
    text = str(plax.make_jaxpr(lambda x: inner(x))(np.float32(1)))
    assert text.startswith("let body = { lambda") == shared
    assert ("jaxpr=body" in text) == shared
