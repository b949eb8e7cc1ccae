"""`plax.random` samplers' `out_sharding=` on a (4, 2) Explicit mesh against JAX 0.10.2
(JAX in a subprocess; skipped where it is not installed): eager and under jit, the
same result type, layout and values bit for bit (the same key draws the same
numbers), and the same errors for bad `out_sharding`s. Also the calls both refuse
without a mesh in context: a gradient or a sampler whose result would be typed as
split over a mesh while it sits on one device."""
import importlib.util

import numpy as np
import pytest

import plax
from jax_differential import run_driver_here, start_driver_in_jax

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")

_XY, _X = "out_sharding=P('x', 'y')", "out_sharding=P('x')"
# name: source of a function of the key, the (8, 4) array `a` (split P('x', 'y')) and
# the mesh; "err_" programs are refused by both
PROGRAMS = {
    "normal": f"lambda k, a: r.normal(k, (8, 4), {_XY})",
    "normal_complex": f"lambda k, a: r.normal(k, (8, 4), jnp.complex64, {_X})",
    "uniform": "lambda k, a: r.uniform(k, (8, 4), minval=-2., maxval=3., "
               "out_sharding=P(None, 'y'))",
    "bits": f"lambda k, a: r.bits(k, (8, 4), {_XY})",
    "bits_uint8": f"lambda k, a: r.bits(k, (8, 4), jnp.uint8, {_X})",
    "randint": f"lambda k, a: r.randint(k, (8, 4), -5, 9, {_XY})",
    "randint_int8": f"lambda k, a: r.randint(k, (8, 4), -5, 9, jnp.int8, {_X})",
    "bernoulli": f"lambda k, a: r.bernoulli(k, 0.3, (8, 4), {_XY})",
    "categorical": f"lambda k, a: r.categorical(k, a, {_X})",
    "categorical_no_replace": "lambda k, a: r.categorical(k, jnp.arange(6.), shape=(4,), "
                              "replace=False, out_sharding=P('x'))",
    "exponential": f"lambda k, a: r.exponential(k, (8, 4), {_XY})",
    "cauchy": f"lambda k, a: r.cauchy(k, (8, 4), {_XY})",
    "laplace": f"lambda k, a: r.laplace(k, (8, 4), {_XY})",
    "logistic": f"lambda k, a: r.logistic(k, (8, 4), {_XY})",
    "gumbel": f"lambda k, a: r.gumbel(k, (8, 4), {_XY})",
    "pareto": f"lambda k, a: r.pareto(k, 3., (8, 4), {_XY})",
    "rayleigh": f"lambda k, a: r.rayleigh(k, 2., (8, 4), {_XY})",
    "lognormal": f"lambda k, a: r.lognormal(k, 0.5, (8, 4), {_XY})",
    "triangular": f"lambda k, a: r.triangular(k, 0., 1., 3., (8, 4), {_XY})",
    "wald": f"lambda k, a: r.wald(k, 2., (8, 4), {_XY})",
    "truncated_normal": f"lambda k, a: r.truncated_normal(k, -1., 2., (8, 4), {_XY})",
    "gamma": f"lambda k, a: r.gamma(k, 2., (8, 4), {_XY})",
    "loggamma": f"lambda k, a: r.loggamma(k, 2., (8, 4), {_XY})",
    "beta": f"lambda k, a: r.beta(k, 2., 3., (8, 4), {_XY})",
    "dirichlet": f"lambda k, a: r.dirichlet(k, jnp.array([1., 2., 3.]), (8,), {_X})",
    "chisquare": f"lambda k, a: r.chisquare(k, 3., (8, 4), {_XY})",
    "t": f"lambda k, a: r.t(k, 3., (8, 4), {_XY})",
    "f": f"lambda k, a: r.f(k, 3., 4., (8, 4), {_XY})",
    "poisson": f"lambda k, a: r.poisson(k, 3., (8, 4), {_XY})",
    "geometric": f"lambda k, a: r.geometric(k, 0.3, (8, 4), {_XY})",
    "rademacher": f"lambda k, a: r.rademacher(k, (8, 4), {_XY})",
    "maxwell": f"lambda k, a: r.maxwell(k, (8,), {_X})",
    "multivariate_normal": "lambda k, a: r.multivariate_normal(k, jnp.zeros(2), "
                           f"jnp.eye(2) * 2., (8,), {_X})",
    "orthogonal": f"lambda k, a: r.orthogonal(k, 2, (8,), {_X})",
    "generalized_normal": f"lambda k, a: r.generalized_normal(k, 1.5, (8, 4), {_XY})",
    "ball": f"lambda k, a: r.ball(k, 2, 2, (8,), {_X})",
    "permutation": f"lambda k, a: r.permutation(k, a, {_XY})",
    "permutation_independent": f"lambda k, a: r.permutation(k, a, 1, True, {_XY})",
    "permutation_range": f"lambda k, a: r.permutation(k, 8, {_X})",
    "named": "lambda k, a: r.normal(k, (8, 4), out_sharding=NamedSharding(mesh, P('x')))",
    "trailing_nones": "lambda k, a: r.normal(k, (8,), out_sharding=P('x', None))",
    "scalar_replicated": "lambda k, a: r.normal(k, ())",
    "scalar_gamma_replicated": "lambda k, a: r.gamma(k, 2.)",
    "no_out_sharding": "lambda k, a: r.normal(k, (8, 4)) + a",
    "err_bad_kind": "lambda k, a: r.normal(k, (8, 4), out_sharding='x')",
    "err_unknown_axis": "lambda k, a: r.uniform(k, (8, 4), out_sharding=P('z'))",
    "err_duplicate_axis": "lambda k, a: r.normal(k, (8, 4), out_sharding=P('x', 'x'))",
    "err_too_long": "lambda k, a: r.normal(k, (8, 4), out_sharding=P(None, None, 'x'))",
    "err_not_divisible": "lambda k, a: r.normal(k, (2, 4), out_sharding=P('x'))",
    "err_other_mesh": "lambda k, a: r.normal(k, (8, 4), out_sharding=NamedSharding("
                      "make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2),"
                      " P('x')))",
    "err_auto_axis": "lambda k, a: r.normal(k, (8, 4), out_sharding=NamedSharding("
                     "make_mesh((4, 2), ('x', 'y'), axis_types=(AxisType.Explicit, "
                     "AxisType.Auto)), P('x', 'y')))",
}

# name: (source, whether it runs under the mesh) of programs without a mesh in context
NO_CONTEXT_PROGRAMS = {
    "err_grad": "lambda k, a: grad(lambda a: (a * a).sum())(a)",
    "err_grad_sin": "lambda k, a: grad(lambda a: jnp.sin(a).sum())(a)",
    # eager: the key names no devices; under jit, `a` does (JAX places a jitted call
    # by the arguments it uses, so each program uses `a`)
    "err_named_sampler": "lambda k, a: r.normal(k, (8, 4), out_sharding=NamedSharding("
                         "mesh, P('x'))) * a",
    "err_spec_sampler": "lambda k, a: r.normal(k, (8, 4), out_sharding=P('x'))",
    "vjp": "lambda k, a: vjp(jnp.sin, a)[1](a)[0]",
    "sum": "lambda k, a: a.sum()",
    "sampler_plain": "lambda k, a: r.uniform(k, (8, 4))",
}

# the programs also run (eager and under jit) and compared value for value; the
# others (the gamma family compiles slowly) are traced only, their result types
# compared: every sampler goes through the same `out_sharding` code
RUN = {"normal", "uniform", "bits", "randint_int8", "bernoulli", "categorical",
       "dirichlet", "maxwell", "permutation", "permutation_range", "named",
       "trailing_nones", "scalar_replicated", "no_out_sharding",
       *(n for n in PROGRAMS if n.startswith("err_"))}

_DRIVER = """
    def answer(out):
        values = np.asarray(out)
        if np.iscomplexobj(values):
            values = np.stack([values.real, values.imag])
        return [repr(typeof(out).sharding.spec), repr(out.sharding.spec), values.tolist()]

    def call(fn, mode, key, a):
        if mode == "trace":
            return repr(make_jaxpr(fn)(key, a).out_avals[0].sharding.spec)
        return answer(fn(key, a) if mode == "eager" else jit(fn)(key, a))

    def run(programs):
        mesh = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
        a = device_put(np.arange(32, dtype=np.float32).reshape(8, 4) % 5 - 2.,
                       NamedSharding(mesh, P("x", "y")))
        answers = {}
        for name, (source, in_context, modes) in programs.items():
            fn = eval(source, dict(globals(), mesh=mesh))
            for mode in modes:
                try:
                    if in_context:
                        with set_mesh(mesh):
                            answers[f"{name}/{mode}"] = call(fn, mode, r.key(7), a)
                    else:
                        answers[f"{name}/{mode}"] = call(fn, mode, r.key(7), a)
                except Exception as err:
                    answers[f"{name}/{mode}"] = "error: " + type(err).__name__
        return answers
"""

_JAX_SIDE = """
    import json, sys
    import numpy as np
    import jax.numpy as jnp
    from jax import (grad, jit, device_put, make_jaxpr, make_mesh, random as r, set_mesh,
                     typeof, vjp)
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
""" + _DRIVER + """
    print(json.dumps(run(json.loads(sys.argv[1]))))
"""

_ALL = {**{n: (s, True, ("trace", "eager", "jit") if n in RUN else ("trace",))
           for n, s in PROGRAMS.items()},
        **{f"no_context_{n}": (s, False, ("eager", "jit"))
           for n, s in NO_CONTEXT_PROGRAMS.items()}}
# JAX asserts a spec's rank where plax raises a ValueError
_SAME_ERRORS = {"error: AssertionError": "error: ValueError"}
# Floats from a jitted program may differ by the rounding of one multiply-add in the
# uniform's [1, 2) scale (2 ulps of 1.0): with the loop emitters the suite compiles
# with (conftest.py), whether XLA:CPU fuses it into an FMA depends on where an element
# falls in its shard's vector loop, and plax and JAX may split the shards differently.
_JIT_FLOAT_SLACK = 2 * float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def answers():
    jax_side = start_driver_in_jax(_JAX_SIDE, _ALL)  # runs while plax does
    plax_side = run_driver_here(_DRIVER, _ALL, r=plax.random, grad=plax.grad, vjp=plax.vjp,
                                make_jaxpr=plax.make_jaxpr, set_mesh=plax.sharding.use_mesh,
                                AxisType=plax.sharding.AxisType)
    return jax_side(), plax_side


@pytest.mark.parametrize("name", _ALL)
def test_sampler_matches_jax(name, answers):
    """The same result type, layout and values bit for bit (or the same error;
    jitted floats within `_JIT_FLOAT_SLACK`)."""
    jax_side, plax_side = answers
    for mode in _ALL[name][2]:
        want, got = jax_side[f"{name}/{mode}"], plax_side[f"{name}/{mode}"]
        if mode == "trace" or isinstance(want, str):
            assert got == _SAME_ERRORS.get(want, want), (mode, got, want)
        else:
            assert isinstance(got, list), (mode, got)
            assert got[:2] == want[:2], mode
            got_values, want_values = np.asarray(got[2]), np.asarray(want[2])
            slack = _JIT_FLOAT_SLACK if mode == "jit" and want_values.dtype.kind == "f" else 0
            np.testing.assert_allclose(got_values, want_values, rtol=0, atol=slack,
                                       err_msg=mode)
