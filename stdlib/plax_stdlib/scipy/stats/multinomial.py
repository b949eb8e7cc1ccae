"""The multinomial distribution: counts x (..., k) of n draws from k categories of
probabilities p (..., k)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util
from plax_stdlib.scipy import special
from plax_stdlib.scipy.stats.distribution_util import promote


def logpmf(x, n, p):
    """log of n! Π p_i^x_i / x_i! where the counts sum to n, -inf elsewhere. The counts
    and n must be integers (as in JAX)."""
    util.check_arraylike("multinomial.logpmf", x, n, p)
    x, n = (jnp.asarray(v) for v in util.promote_dtypes_numeric(x, n))
    if not jnp.issubdtype(x.dtype, np.integer):
        raise TypeError("multinomial.logpmf: x and n must be of integer type; got "
                        f"x.dtype={x.dtype}, n.dtype={n.dtype}")
    p = promote("multinomial.logpmf", p)
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_mass = special.gammaln(n + 1) + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                                axis=-1)
    return jnp.where(jnp.sum(x, axis=-1) == n, log_mass, -np.inf)


def pmf(x, n, p):
    """P(X = x)."""
    return jnp.exp(logpmf(x, n, p))
