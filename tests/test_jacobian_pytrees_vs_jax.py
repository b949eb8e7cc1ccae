"""Jacobians over custom pytrees against JAX 0.10.2 (JAX in a subprocess; skipped
where it is not installed): the results, and the error classes JAX raises.

JAX's jacfwd/jacrev check their inputs by mapping over the arguments' pytree, which
rebuilds it with None leaves: a pytree class whose unflatten validates its leaves
(`jnp.asarray`) fails there with a ValueError, before anything is traced. A class
whose unflatten takes any leaves gets its Jacobian, a pytree of pytrees.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import requires_jax, run_driver_in_jax

pytestmark = requires_jax

PROGRAMS = {
    "validating_jacfwd": "lib.jacfwd(lambda p: Checked(p.x * p.y, p.x + p.y))(Checked(1.0, 2.0))",
    "validating_jacrev": "lib.jacrev(lambda p: Checked(p.x * p.y, p.x + p.y))(Checked(1.0, 2.0))",
    "validating_jacobian": "lib.jacobian(lambda p: p.x * p.y)(Checked(1.0, 2.0))",
    "validating_hessian": "lib.hessian(lambda p: p.x * p.y)(Checked(1.0, 2.0))",
    "validating_argnums": "lib.jacfwd(lambda a, p: a * p.x, argnums=(0, 1))("
                          "2.0, Checked(1.0, 3.0))",
    "validating_int_jacrev": "lib.jacrev(lambda p: p.x)(Checked(1, 2))",
    "validating_grad": "lib.grad(lambda p: p.x * p.y)(Checked(1.0, 2.0))",
    "plain_jacfwd": "lib.jacfwd(lambda p: Plain(p.x * p.y, jnp.sin(p.x)))(Plain(1.0, 2.0))",
    "plain_jacrev": "lib.jacrev(lambda p: Plain(p.x * p.y, jnp.sin(p.x)))(Plain(1.0, 2.0))",
    "plain_hessian": "lib.hessian(lambda p: p.x * p.y ** 2)(Plain(1.0, 2.0))",
    "plain_vector": "lib.jacfwd(lambda p: p.x * p.y)(Plain(jnp.arange(3.0), 2.0))",
}

DRIVER = """
def run(programs):
    tu = lib.tree_util

    @tu.register_pytree_node_class
    class Checked:
        def __init__(self, x, y):
            self.x, self.y = jnp.asarray(x), jnp.asarray(y)

        def tree_flatten(self):
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    @tu.register_pytree_node_class
    class Plain:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten(self):
            return (self.x, self.y), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    answers = {}
    for name, source in programs.items():
        try:
            out = eval(source, dict(globals(), Checked=Checked, Plain=Plain))
            answers[name] = [np.asarray(leaf).tolist() for leaf in tu.tree_leaves(out)]
        except Exception as err:
            answers[name] = "error: " + type(err).__name__
    return answers
"""

_JAX_SIDE = """
import json, os, sys
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax as lib
import jax.numpy as jnp
""" + DRIVER + """
print(json.dumps(run(json.loads(sys.argv[1]))))
"""


@pytest.fixture(scope="module")
def answers():
    theirs = run_driver_in_jax(_JAX_SIDE, PROGRAMS)
    scope = dict(np=np, lib=plax, jnp=jnp)
    exec(textwrap.dedent(DRIVER), scope)
    return scope["run"](PROGRAMS), theirs


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_as_jax(answers, name):
    mine, theirs = answers
    if isinstance(theirs[name], str):
        assert mine[name] == theirs[name]
    else:
        assert not isinstance(mine[name], str), mine[name]
        assert len(mine[name]) == len(theirs[name])
        for a, b in zip(mine[name], theirs[name]):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_the_answers_compared_are_errors_and_values(answers):
    """Not vacuous: the validating class fails (JAX's ValueError), the plain one not."""
    mine, _ = answers
    assert mine["validating_jacfwd"] == "error: ValueError"
    assert mine["validating_int_jacrev"] == "error: TypeError"
    np.testing.assert_allclose(mine["plain_jacfwd"], [2.0, 1.0, np.cos(1.0), 0.0], rtol=1e-6)
