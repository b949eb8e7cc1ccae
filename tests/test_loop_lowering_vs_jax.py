"""Loops lower to the StableHLO text JAX 0.10.2 prints for them: `jit(f).lower(...)
.as_text()` of fori_loop, while_loop, scan (its variants), lax.map and loops under
grad and vmap, every program in one subprocess per library."""
import re

import pytest
from jax_reference import requires_jax, run_reference

_PROGRAMS = """
lax = jax.lax
x3 = jnp.arange(3.)
programs = {
 "fori_static": (lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2. + i, x), (1.,)),
 "fori_traced": (lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2., x), (3, 1.)),
 "fori_unroll": (lambda x: lax.fori_loop(0, 4, lambda i, c: c + i, x, unroll=2), (1.,)),
 "while": (lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2., x), (1.,)),
 "while_consts": (lambda x, y: lax.while_loop(lambda c: c < y, lambda c: c * y, x), (1., 2.)),
 "scan_xs": (lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0., xs), (x3,)),
 "scan_consts_reverse": (lambda xs, y: lax.scan(lambda c, x: (c * y + x, c), 0., xs,
                                                reverse=True), (x3, 2.)),
 "scan_no_xs": (lambda c0: lax.scan(lambda c, _: (c * 2., c), c0, None, length=3), (1.,)),
 "scan_unroll2": (lambda xs: lax.scan(lambda c, x: (c + x, c), 0., xs, unroll=2),
                  (jnp.arange(5.),)),
 "scan_unroll2_reverse": (lambda xs: lax.scan(lambda c, x: (c + x, c), 0., xs, unroll=2,
                                              reverse=True), (jnp.arange(5.),)),
 "scan_unroll_all": (lambda xs: lax.scan(lambda c, x: (c + x, c), 0., xs, unroll=True), (x3,)),
 "scan_length_only": (lambda: lax.scan(lambda c, _: (c + 1, None), 0, length=4), ()),
 "scan_multi": (lambda xs, ys: lax.scan(lambda c, x: ((c[0] + x[0], c[1] * x[1]),
                                                      (c[0], x[1] * 2)), (0., 1.), (xs, ys)),
                (x3, jnp.ones(3))),
 "scan_pytree": (lambda xs: lax.scan(lambda c, x: ({"a": c["a"] + x, "b": c["b"]}, None),
                                     {"a": jnp.zeros(2), "b": 1}, xs), (jnp.ones((3, 2)),)),
 "map": (lambda xs: lax.map(lambda x: x * 2. + 1., xs), (x3,)),
 "grad_scan": (jax.grad(lambda xs: lax.scan(lambda c, x: (jnp.sin(c * x), c), 1., xs)[0]),
               (x3,)),
 "vmap_scan": (jax.vmap(lambda xs: lax.scan(lambda c, x: (c + x, c), 0., xs)),
               (jnp.ones((2, 3)),)),
 "vmap_fori": (jax.vmap(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, x)), (x3,)),
}
result = {}
for name, (f, args) in programs.items():
    lowered = jax.jit(f).lower(*args)
    result[name] = [lowered.as_text(), lowered.as_text(debug_info=True)]
"""

@pytest.fixture(scope="module")
def texts():
    return run_reference(_PROGRAMS), run_reference(_PROGRAMS, library="plax")


def _loop_op_names(text: str) -> set[str]:
    """The name locations of the ops a loop emits in its regions (`while/body/add`),
    under whatever transformations. Locations differ from JAX's elsewhere (JAX's
    callsite frames, and none in private functions), not for loops."""
    names = set()
    for name in re.findall(r'loc\("[^"]*?/(while/[^"]*)"', text):
        if name.count("/") == 2 and not name.split("/")[-1].startswith("jit"):
            names.add(name)
    return names


@requires_jax
@pytest.mark.parametrize("name", [
    "fori_static", "fori_traced", "fori_unroll", "while", "while_consts", "scan_xs",
    "scan_consts_reverse", "scan_no_xs", "scan_unroll2", "scan_unroll2_reverse",
    "scan_unroll_all", "scan_length_only", "scan_multi", "scan_pytree", "map", "grad_scan",
    "vmap_scan", "vmap_fori"])
def test_loop_lowers_as_in_jax(texts, name):
    (jax_text, jax_debug), (plax_text, plax_debug) = (t[name] for t in texts)
    assert plax_text == jax_text
    assert _loop_op_names(plax_debug) == _loop_op_names(jax_debug)
