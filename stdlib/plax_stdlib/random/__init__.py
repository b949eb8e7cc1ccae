"""`plax.random`: JAX's counter-based PRNG, key for key and bit for bit.

Keys are explicit values: `key(seed)` makes one, `split` and `fold_in` derive new
ones, and every sampler takes one and returns the same values for the same key —
the values JAX 0.10.2 gives, under either `jax_threefry_partitionable` setting and
for the `threefry2x32`, `rbg` and `unsafe_rbg` implementations.
"""
# Registering the implementations (threefry2x32, rbg, unsafe_rbg):
from plax_stdlib.random import rbg as _rbg, threefry as _threefry  # noqa: F401
from plax_stdlib.random.continuous import (
    cauchy as cauchy,
    exponential as exponential,
    gumbel as gumbel,
    laplace as laplace,
    logistic as logistic,
    lognormal as lognormal,
    pareto as pareto,
    rayleigh as rayleigh,
    triangular as triangular,
    truncated_normal as truncated_normal,
    wald as wald,
    weibull_min as weibull_min,
)
from plax_stdlib.random.discrete import (
    bernoulli as bernoulli,
    binomial as binomial,
    categorical as categorical,
    geometric as geometric,
    multinomial as multinomial,
    poisson as poisson,
    rademacher as rademacher,
    randint as randint,
)
from plax_stdlib.random.gamma_samplers import (
    beta as beta,
    chisquare as chisquare,
    dirichlet as dirichlet,
    f as f,
    gamma as gamma,
    generalized_normal as generalized_normal,
    loggamma as loggamma,
    random_gamma_p as random_gamma_p,
    t as t,
)
from plax_stdlib.random.impls import key_dtype as key_dtype
from plax_stdlib.random.keys import (
    PRNGKey as PRNGKey,
    bits as bits,
    clone as clone,
    fold_in as fold_in,
    key as key,
    key_data as key_data,
    key_impl as key_impl,
    split as split,
    wrap_key_data as wrap_key_data,
)
from plax_stdlib.random.multivariate import (
    ball as ball,
    double_sided_maxwell as double_sided_maxwell,
    maxwell as maxwell,
    multivariate_normal as multivariate_normal,
    orthogonal as orthogonal,
)
from plax_stdlib.random.shuffle import choice as choice, permutation as permutation
from plax_stdlib.random.uniform_normal import normal as normal, uniform as uniform


# Errors raised below a public function are shown from the caller (plax.errors).
from plax.extend.traceback_util import api_boundaries as _api_boundaries  # noqa: E402

_api_boundaries(globals())
