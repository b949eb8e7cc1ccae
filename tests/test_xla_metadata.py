"""plax.experimental.xla_metadata: the frontend attributes on lowered ops against
JAX's (JAX in one subprocess), merging of nested blocks, the decorator and value
forms, and that they survive jit caching and transformations."""
from __future__ import annotations

import re

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental.xla_metadata import set_xla_metadata
from tests.frontend_attributes_driver import TAGGED_OPS
from tests.jax_differential import requires_jax, run_driver_here, start_driver_in_jax

# Each program maps `x` (f32[2]) through the names the driver sees; `tagged_ops` lists
# the ops of its lowered module with their frontend attributes.
_DRIVER = TAGGED_OPS + r'''

def nested(x):
    with set_xla_metadata(a="1", b=True):
        y = jnp.sin(x)
        with set_xla_metadata(a="2", c=3):
            z = y * 2
    return z + 1

@jit
def inner(x):
    return jnp.cos(x)

def around_inner(x):
    with set_xla_metadata(k="v"):
        return inner(x) + 1

@set_xla_metadata(dec="d")
def decorated(x):
    return jnp.exp(x)

def value_form(x):
    return set_xla_metadata(jnp.sin(x) * 3, tag="t", flag=False)

def value_in_block(x):
    with set_xla_metadata(tag="outer", other="o"):
        return set_xla_metadata(jnp.sin(x), tag="inner")

def tagged(x):
    with set_xla_metadata(t=1):
        return jnp.sin(x)

# Transformed programs: only their tagged ops are compared (the untagged ones of
# plax's and JAX's rules may differ).
TRANSFORMED = {
    "vmap": lambda x: vmap(tagged)(x.reshape(2, 1)),
    "jvp": lambda x: jvp(tagged, (x,), (x,)),
    "remat_grad": grad(lambda x: checkpoint(tagged)(x).sum()),
    "scan": lambda x: lax.scan(lambda c, _: (tagged(c), None), x, None, length=2)[0],
    "while": lambda x: lax.while_loop(lambda c: c[0] < 3,
                                      lambda c: (c[0] + 1, tagged(c[1])), (0, x))[1],
}

def run(programs):
    x = jnp.ones((2,), jnp.float32)
    out = {name: tagged_ops(jit(globals()[name]).lower(x).as_text()) for name in programs}
    for name, f in TRANSFORMED.items():
        out[name] = [op for op in tagged_ops(jit(f).lower(x).as_text()) if "{" in op]
    with set_xla_metadata(outer="o"):
        out["outside_jit"] = tagged_ops(jit(lambda x: x * 3).lower(x).as_text())
    return out
'''
PROGRAMS = ["nested", "around_inner", "decorated", "value_form", "value_in_block"]


@pytest.fixture(scope="module")
def jax_answers():
    return start_driver_in_jax(
        "import json, sys\nimport jax.numpy as jnp\n"
        "from jax import checkpoint, grad, jit, jvp, lax, vmap\n"
        "from jax.experimental.xla_metadata import set_xla_metadata\n" + _DRIVER
        + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", PROGRAMS)()


@requires_jax
def test_lowered_attributes_match_jax(jax_answers):
    got = run_driver_here(_DRIVER, PROGRAMS, set_xla_metadata=set_xla_metadata,
                          checkpoint=plax.checkpoint, vmap=plax.vmap)
    assert got == jax_answers
    assert got["nested"] == ['sine{a = "1", b = "true"}', "constant", "broadcast_in_dim",
                             'multiply{a = "2", b = "true", c = "3"}', "constant",
                             "broadcast_in_dim", "add"]


def _attrs(text: str) -> list[str]:
    return re.findall(r"stablehlo\.(\w+) .*mhlo\.frontend_attributes = \{([^}]*)\}", text)


def test_a_cached_trace_is_not_reused_under_other_metadata():
    f = plax.jit(lambda x: jnp.sin(x))
    x = jnp.ones((2,), jnp.float32)
    assert _attrs(f.lower(x).as_text()) == []
    with set_xla_metadata(k="v"):
        assert _attrs(f.lower(x).as_text()) == [("sine", 'k = "v"')]
        np.testing.assert_allclose(f(x), np.sin(1.0) * np.ones(2), rtol=1e-6)
    assert _attrs(f.lower(x).as_text()) == []


def test_gradient_ops_keep_the_tags_of_their_forward_code():
    def loss(x):
        with set_xla_metadata(gr=1):
            return jnp.sin(x).sum()
    x = jnp.ones((2,), jnp.float32)
    tagged = dict(_attrs(plax.jit(plax.grad(loss)).lower(x).as_text()))
    assert tagged["cosine"] == tagged["multiply"] == 'gr = "1"'
    np.testing.assert_allclose(plax.grad(loss)(x), np.cos(1.0) * np.ones(2), rtol=1e-6)


def test_value_form_under_transformations():
    x = jnp.arange(3.0, dtype=jnp.float32)
    tag = lambda v: set_xla_metadata(v * 2, t="1")  # noqa: E731
    assert _attrs(plax.jit(tag).lower(x).as_text()) == [("multiply", 't = "1"')]
    np.testing.assert_allclose(tag(x), 2 * np.arange(3.0))
    np.testing.assert_allclose(plax.vmap(tag)(x.reshape(3, 1)), 2 * np.arange(3.0)[:, None])
    primal, tangent = plax.jvp(tag, (x,), (jnp.ones(3, jnp.float32),))
    np.testing.assert_allclose(tangent, 2 * np.ones(3))
    np.testing.assert_allclose(plax.grad(lambda v: tag(v).sum())(x), 2 * np.ones(3))
    tree = set_xla_metadata({"a": x, "b": (x,)}, t="1")
    assert set(tree) == {"a", "b"} and isinstance(tree["b"], tuple)


def test_an_empty_block_changes_nothing_and_a_decorated_jit_lowers_under_it():
    x = jnp.ones((2,), jnp.float32)
    with set_xla_metadata():
        assert _attrs(plax.jit(jnp.sin).lower(x).as_text()) == []
    f = set_xla_metadata(d="1")(plax.jit(jnp.sin))
    assert _attrs(f.lower(x).as_text()) == [("sine", 'd = "1"')]
    assert f.__name__ == "sin"
