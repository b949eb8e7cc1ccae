"""plax.core: JAX 0.10.2's public `jax.core` names, and its evaluation contexts."""
import numpy as np
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp

_PUBLIC_NAMES = "result = sorted(n for n in dir(jax.core) if not n.startswith('_'))"


@requires_jax
def test_public_names_are_jaxs():
    jax_names = run_reference(_PUBLIC_NAMES)
    assert set(jax_names) <= set(dir(plax.core))
    assert sorted(plax.core.__all__) == jax_names


def test_eval_contexts_compute_eagerly_inside_a_trace():
    def fn(x):
        with plax.core.eval_context():
            doubled = jnp.ones(2) * 2
        with plax.core.ensure_compile_time_eval():
            total = jnp.arange(3).sum()
        assert not isinstance(doubled, plax.core.Tracer)
        assert not isinstance(total, plax.core.Tracer) and int(total) == 3
        return x + doubled + total

    np.testing.assert_array_equal(plax.jit(fn)(1.0), [6.0, 6.0])
    closed = plax.make_jaxpr(lambda x: x * 2)(1.0)
    assert plax.core.eval_jaxpr(closed.jaxpr, closed.consts, 3.0) == [6.0]
    assert isinstance(closed.jaxpr.eqns[0].invars[0], plax.core.Atom)
