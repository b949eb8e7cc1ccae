"""Gamma samples, and the distributions built from them: `gamma`, `loggamma`, `beta`,
`dirichlet`, `chisquare`, `t`, `f`, `generalized_normal`.

`random_gamma` is a primitive: each element draws with Marsaglia and Tsang's
rejection method from its own key (one split of the key per element), and it
differentiates with respect to `a` by the implicit reparameterisation gradient
(`lax.random_gamma_grad`), as JAX does. `loggamma` draws in log space, which
keeps precision for small `a`.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import plax
from plax.extend import dtypes
from plax.extend.ad import defjvp
from plax.extend.batching import bdim_at_front
from plax.extend.constructors import FLOAT, check_dtype, describe, standard_primitive
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.out_sharding import laid_out
from plax_stdlib.random import key_primitives as prims
from plax_stdlib.random.continuous import const, _exponential, prepare, prepare_castable
from plax_stdlib.random.discrete import _rademacher
from plax_stdlib.random.keys import check_prng_key, split_typed
from plax_stdlib.random.sampling import canonicalize_shape, check_shape, float_dtype, sampled
from plax_stdlib.random.threefry import threefry_prng_impl
from plax_stdlib.random.traced_lowering import lower_traced
from plax_stdlib.random.uniform_normal import _normal, _uniform


# --- one sample -----------------------------------------------------------------------

def _gamma_one(key, alpha, log_space: bool):
    """One Gamma(alpha) sample (Marsaglia and Tsang); alpha < 1 draws Gamma(alpha + 1)
    and multiplies by u ** (1 / alpha), in log space if asked."""
    zero, one, two, minus_one = (const(alpha, v) for v in (0, 1, 2, -1))
    one_over_two, one_over_three = const(alpha, 0.5), const(alpha, 1.0 / 3.0)
    squeeze_const = const(alpha, 0.0331)
    dtype = alpha.dtype
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_over_three)
    c = lax.div(one_over_three, lax.sqrt(d))

    def rejected(state):
        _, x, v, u = state
        return lax.bitwise_and(
            lax.ge(u, lax.sub(one, lax.mul(squeeze_const, lax.mul(x, x)))),
            lax.ge(lax.log(u), lax.add(lax.mul(x, one_over_two),
                                       lax.mul(d, lax.add(lax.sub(one, v), lax.log(v))))))

    def propose(state):
        def next_normal(kxv):
            key, subkey = split_typed(kxv[0])
            x = _normal(subkey, (), dtype)
            return key, x, lax.add(one, lax.mul(x, c))

        key, x_key, u_key = split_typed(state[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_normal,
                                 (x_key, zero, minus_one))
        u = _uniform(u_key, 0.0, 1.0, (), dtype)
        return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    key, subkey = split_typed(key)
    _, _, v, _ = lax.while_loop(rejected, propose, (key, zero, one, two))  # starts rejected
    if log_space:
        log_samples = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select(boost_mask | (log_samples == 0), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    samples = 1 - _uniform(subkey, 0.0, 1.0, (), dtype)
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _gamma_samples(keys, a, log_space: bool):
    """A sample per element of `a`, each from its own split of the key it falls under
    (`keys.shape` is a prefix of `a.shape`)."""
    split_count = math.prod(a.shape[keys.ndim:])
    keys = jnp.ravel(keys)
    keys = jnp.ravel(plax.vmap(lambda k: split_typed(k, split_count))(keys))
    alphas = jnp.ravel(a)
    one = functools.partial(_gamma_one, log_space=log_space)
    if keys.dtype._impl == threefry_prng_impl:
        samples = plax.vmap(one)(keys, alphas)
    else:  # other implementations' bits may not batch per key (rbg)
        samples = lax.map(lambda args: one(*args), (keys, alphas))
    return jnp.reshape(samples, a.shape)


def _gamma_grad(sample, a, log_space: bool):
    """d sample / d a, per element."""
    samples, alphas = jnp.reshape(sample, -1), jnp.reshape(a, -1)
    if log_space:  # d log(s) = ds / s, with s = exp(log s) kept away from 0
        samples = lax.exp(samples)
        tiny = lax.full_like(samples, dtypes.finfo(samples.dtype).tiny)
        samples = lax.select(lax.eq(samples, const(sample, 0)), tiny, samples)

        def grad(alpha, s):
            return lax.random_gamma_grad(alpha, s) / s
    else:
        grad = lax.random_gamma_grad
    if plax.default_backend() == "cpu":
        grads = lax.map(lambda args: grad(*args), (alphas, samples))
    else:
        grads = plax.vmap(grad)(alphas, samples)
    return grads.reshape(np.shape(a))


# --- the primitive --------------------------------------------------------------------

def _random_gamma_abstract_eval(keys, a, *, log_space):
    if not prims.is_key_aval(keys):
        raise TypeError(f"random_gamma takes a typed key array, got {describe(keys)}")
    check_dtype("random_gamma", a, FLOAT, what="a")
    if a.shape[:keys.ndim] != keys.shape:
        raise TypeError(f"random_gamma: the keys {describe(keys)} must index the leading "
                        f"dimensions of a {describe(a)}")
    return a


def _gamma_data(key_data, a, *, impl, log_space):
    return _gamma_samples(prims.random_wrap(key_data, impl), a, log_space)


def _random_gamma_lower(ctx, keys, a, *, log_space):
    return lower_traced(ctx, _gamma_data, keys, a, impl=ctx.avals_in[0].dtype._impl,
                        log_space=log_space)


def _random_gamma_batching(axis_data, args, dims, *, log_space):
    keys, a = (bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims))
    return random_gamma_p.bind(keys, a, log_space=log_space), 0


random_gamma_p = standard_primitive(
    "random.random_gamma", _random_gamma_abstract_eval, _random_gamma_lower,
    jvp=defjvp(None, lambda g, ans, keys, a, *, log_space:
               g * _gamma_grad(ans, a, log_space)),
    batching=_random_gamma_batching)


# --- gamma, loggamma --------------------------------------------------------------------

def _gamma_dtype_and_shape(name: str, key, shape, dtype):
    key, _ = check_prng_key(name, key)
    dtype = float_dtype(name, dtype)
    return key, None if shape is None else canonicalize_shape(shape, name), dtype


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Gamma(a, 1) distribution (shape `a`, rate 1; mean `a`). Divide
    by a rate, or multiply by a scale, for other gamma distributions.

    Differentiable in `a` (by implicit reparameterization).

    Args:
        key: a PRNG key.
        a: the shape parameter, positive (an array).
        shape: the shape of the result (default: `a`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of positive values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.gamma(key, 2.0, (10000,))
        >>> bool(abs(x.mean() - 2.0) < 0.1)
        True
    """
    key, shape, dtype = _gamma_dtype_and_shape("gamma", key, shape, dtype)
    return sampled("gamma", out_sharding, shape,
                   lambda k, a: _gamma(k, a, shape, dtype, False), key, a)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
    """Samples the logarithm of a Gamma(a, 1) variable, drawn in log space so that
    it stays accurate for small `a` (where the gamma samples themselves
    underflow to 0).

    Args:
        key: a PRNG key.
        a: the shape parameter, positive (an array).
        shape: the shape of the result (default: `a`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.loggamma(key, 0.01, (3,))
        >>> bool(plax.numpy.isfinite(x).all())  # exp(x) would often be 0.0 in float32
        True
    """
    key, shape, dtype = _gamma_dtype_and_shape("loggamma", key, shape, dtype)
    return laid_out("loggamma", out_sharding,
                    lambda k, a: _gamma(k, a, shape, dtype, True), key, a)


@functools.partial(plax.jit, static_argnums=(2, 3, 4))
def _gamma(key, a, shape, dtype, log_space):
    if shape is None:
        shape = np.shape(a)
    else:
        check_shape("gamma", shape, np.shape(a))
    a = lax.convert_element_type(a, dtype)
    if np.shape(a) != shape:
        a = jnp.broadcast_to(a, shape)
    return random_gamma_p.bind(key, a, log_space=log_space)


# --- built from gamma ---------------------------------------------------------------------

def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Beta(a, b) distribution on [0, 1], whose mean is a / (a + b).

    Args:
        key: a PRNG key.
        a: the first shape parameter, positive (an array broadcast with `b`).
        b: the second shape parameter, positive.
        shape: the shape of the result (default: `a` and `b` broadcast together).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` with values in [0, 1].

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.beta(key, 2.0, 6.0, (10000,))
        >>> bool(abs(x.mean() - 0.25) < 0.01)
        True
    """
    key, shape, dtype = prepare_castable("beta", key, shape, dtype, a, b)
    return sampled("beta", out_sharding, shape,
                   lambda k, a, b: _beta(k, a, b, shape, dtype), key, a, b)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _beta(key, a, b, shape, dtype):
    key_a, key_b = split_typed(key)
    a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
    log_gamma_a = _gamma(key_a, a, shape, dtype, True)
    log_gamma_b = _gamma(key_b, b, shape, dtype, True)
    # gamma_a / (gamma_a + gamma_b), scaled by the larger to keep precision.
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = jnp.exp(log_gamma_a - log_max)
    gamma_b_scaled = jnp.exp(log_gamma_b - log_max)
    return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
    """Samples the Dirichlet distribution: probability vectors (positive, summing
    to 1) whose mean is `alpha / alpha.sum()`.

    Args:
        key: a PRNG key.
        alpha: the concentration parameters, positive, along the last axis.
        shape: the shape of the result (the batch shape, without the last
            axis; default: `alpha`'s batch shape).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of shape `(*shape, alpha.shape[-1])` whose last axis sums to 1.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.dirichlet(key, plax.numpy.array([1.0, 2.0, 3.0]), (4,))
        >>> x.shape, bool(plax.numpy.allclose(x.sum(-1), 1.0))
        ((4, 3), True)
    """
    key, _ = check_prng_key("dirichlet", key)
    dtype = float_dtype("dirichlet", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape, "dirichlet")
    return sampled("dirichlet", out_sharding, shape,
                   lambda k, alpha: _dirichlet(k, alpha, shape, dtype), key, alpha)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _dirichlet(key, alpha, shape, dtype):
    if not np.ndim(alpha) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{np.ndim(alpha)}")
    if shape is None:
        shape = np.shape(alpha)[:-1]
    else:
        check_shape("dirichlet", shape, np.shape(alpha)[:-1])
    alpha = lax.convert_element_type(alpha, dtype)
    # Normalised gamma samples, computed from log-gamma ones (small alpha).
    log_gamma = _gamma(key, alpha, shape + np.shape(alpha)[-1:], dtype, True)
    unnormalized = jnp.exp(log_gamma - jnp.max(log_gamma, -1, keepdims=True))
    return unnormalized / jnp.sum(unnormalized, -1, keepdims=True)


def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Samples the chi-square distribution with `df` degrees of freedom (the sum
    of `df` squared standard normals; mean `df`).

    Args:
        key: a PRNG key.
        df: the degrees of freedom, positive (an array).
        shape: the shape of the result (default: `df`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of non-negative values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.chisquare(key, 3.0, (10000,))
        >>> bool(abs(x.mean() - 3.0) < 0.1)
        True
    """
    key, shape, dtype = prepare_castable("chisquare", key, shape, dtype, df)
    return sampled("chisquare", out_sharding, shape,
                   lambda k, df: _chisquare(k, df, shape, dtype), key, df)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _chisquare(key, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    two = const(df, 2)
    log_g = _gamma(key, lax.div(df, two), shape, dtype, True)
    return lax.mul(jnp.exp(log_g), two)


def t(key, df, shape=None, dtype=None, *, out_sharding=None):
    """Samples Student's t distribution with `df` degrees of freedom (heavier
    tailed than the normal; variance df / (df - 2) for df > 2).

    Args:
        key: a PRNG key.
        df: the degrees of freedom, positive.
        shape: the shape of the result (default: `df`'s).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.t(key, 10.0, (10000,))
        >>> bool(abs(x.var() - 1.25) < 0.1)
        True
    """
    key, shape, dtype = prepare_castable("t", key, shape, dtype, df)
    return sampled("t", out_sharding, shape, lambda k, df: _t(k, df, shape, dtype), key, df)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _t(key, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = split_typed(key)
    n = _normal(key_n, shape, dtype)
    half_df = lax.div(df, const(n, 2))
    g = _gamma(key_g, half_df, shape, dtype, False)
    return n * jnp.sqrt(half_df / g)


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
    """Samples the F distribution with `dfnum` and `dfden` degrees of freedom (a
    ratio of chi-square variables, each divided by its degrees of freedom).

    Args:
        key: a PRNG key.
        dfnum: the numerator's degrees of freedom, positive.
        dfden: the denominator's degrees of freedom, positive.
        shape: the shape of the result (default: the parameters broadcast together).
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype` of non-negative values.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.f(key, 5.0, 10.0, (10000,))  # mean 10 / (10 - 2)
        >>> bool(abs(x.mean() - 1.25) < 0.05)
        True
    """
    key, shape, dtype = prepare_castable("f", key, shape, dtype, dfnum, dfden)
    return sampled("f", out_sharding, shape, lambda k, dfnum, dfden: _f(
        k, dfnum, dfden, shape, dtype), key, dfnum, dfden)


@functools.partial(plax.jit, static_argnums=(3, 4))
def _f(key, dfnum, dfden, shape, dtype):
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = split_typed(key)
    chi2_dfn = _chisquare(key_dfn, dfnum, shape, dtype)
    chi2_dfd = _chisquare(key_dfd, dfden, shape, dtype)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
    """Samples the generalized normal distribution, of density proportional to
    `exp(-|x| ** p)`: p = 2 is a normal of variance 1/2, p = 1 a Laplace.

    Args:
        key: a PRNG key.
        p: the shape parameter, positive.
        shape: the shape of the result.
        dtype: a floating-point dtype (default: float32, float64 with x64).
        out_sharding: the result's sharding over the mesh in context.

    Returns:
        An array of `shape` and `dtype`.

    Examples:
        >>> import plax
        >>> key = plax.random.key(0)
        >>> x = plax.random.generalized_normal(key, 2.0, (10000,))
        >>> bool(abs(x.var() - 0.5) < 0.05)
        True
    """
    key, shape, dtype = prepare("generalized_normal", key, shape, dtype)
    return sampled("generalized_normal", out_sharding, shape,
                   lambda k, p: _generalized_normal(k, p, shape, dtype), key, p)


@functools.partial(plax.jit, static_argnums=(2, 3))
def _generalized_normal(key, p, shape, dtype):
    keys = split_typed(key)
    g = _gamma(keys[0], 1 / p, shape, dtype, False)
    r = _rademacher(keys[1], shape, dtype)
    return r * g ** (1 / p)
