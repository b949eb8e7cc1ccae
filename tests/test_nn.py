"""plax.nn: activations, the softmax family, one_hot, standardize and attention,
against NumPy references, finite differences and (in a subprocess) JAX."""
import math

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
import plax.numpy as jnp
from plax import nn
from plax.extend.config import softmax_custom_jvp
from plax.test_util import check_grads

F32, F64 = np.float32, np.float64
EDGES = np.array([-np.inf, -30.0, -6.5, -1.0, -0.25, 0.0, 0.25, 1.0, 6.0, 6.5, 30.0, np.inf,
                  np.nan])


def _np_sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


def _np_softplus(x):
    return np.logaddexp(x, 0)


def _np_erf(x):
    return np.vectorize(math.erf)(x)


REFERENCES = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "sigmoid": _np_sigmoid,
    "softplus": _np_softplus,
    "log_sigmoid": lambda x: -_np_softplus(-x),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "silu": lambda x: x * _np_sigmoid(x),
    "swish": lambda x: x * _np_sigmoid(x),
    "mish": lambda x: x * np.tanh(_np_softplus(x)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772
                                                    * np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "identity": lambda x: x,
    "tanh": np.tanh,
    "gelu": lambda x: x * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "gelu_exact": lambda x: x * 0.5 * (1 + _np_erf(x / np.sqrt(2))),
}


def _activation(name):
    if name == "gelu_exact":
        return lambda x: nn.gelu(x, approximate=False)
    return getattr(nn, name)


@pytest.fixture(scope="module")
def activations_under_jit():
    """Every activation on the edge values, float32 and float64, in one jit each."""
    out = {}
    for dtype in (F32, F64):
        with plax.enable_x64(dtype == F64):
            x = EDGES.astype(dtype)
            fn = plax.jit(lambda x: {n: _activation(n)(x) for n in REFERENCES})
            out[dtype] = {k: np.asarray(v) for k, v in fn(x).items()}
    return out


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_activation_matches_numpy(name, dtype, activations_under_jit):
    with np.errstate(invalid="ignore", over="ignore"):
        want = REFERENCES[name](EDGES.astype(F64))
    got = activations_under_jit[dtype][name]
    assert got.dtype == dtype
    tol = 1e-6 if dtype == F32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def test_activations_eagerly_on_empty_scalar_and_integer_inputs():
    for name in ("relu", "sigmoid", "gelu", "softplus", "elu", "hard_tanh", "log1mexp"):
        fn = getattr(nn, name)
        assert fn(np.zeros((0, 3), F32)).shape == (0, 3)
        assert np.asarray(fn(np.float32(0.5))).shape == ()
    assert nn.relu(np.array([-2, 3], np.int32)).dtype == np.int32
    np.testing.assert_array_equal(nn.relu(np.array([-2, 3], np.int32)), [0, 3])
    assert nn.relu(1.0).dtype == F32 and nn.relu(1.0).weak_type


def test_log1mexp_is_accurate_in_both_regimes():
    x = np.array([1e-10, 1e-3, 0.5, np.log(2), 2.0, 40.0])
    with plax.enable_x64(True):
        want = [math.log(-math.expm1(-v)) if v < 1 else math.log1p(-math.exp(-v)) for v in x]
        np.testing.assert_allclose(nn.log1mexp(x), want, rtol=1e-14)
    assert np.isnan(nn.log1mexp(np.float32(-1.0)))


def test_kinks_have_jaxs_derivatives():
    grad = plax.grad
    assert grad(nn.relu)(0.0) == 0.0 and grad(nn.relu)(2.0) == 1.0
    assert grad(nn.relu6)(0.0) == 0.0 and grad(nn.relu6)(6.0) == 0.0
    assert grad(nn.relu6)(3.0) == 1.0
    assert grad(nn.hard_tanh)(1.0) == 1.0 and grad(nn.hard_tanh)(1.5) == 0.0
    assert grad(nn.leaky_relu)(-1.0) == pytest.approx(0.01)
    assert grad(nn.celu)(0.0) == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["sigmoid", "softplus", "log_sigmoid", "silu", "mish", "elu",
                                  "selu", "celu", "gelu", "gelu_exact", "squareplus",
                                  "soft_sign", "log1mexp"])
def test_activation_derivatives(name):
    x = np.array([0.3, 1.7, 2.5] if name == "log1mexp" else [-2.5, -0.3, 0.4, 1.7], F64)
    with plax.enable_x64(True):
        check_grads(_activation(name), (x,), order=2, modes=("fwd", "rev"))


def test_glu_and_its_errors():
    x = np.arange(8.0, dtype=F32).reshape(2, 4)
    np.testing.assert_allclose(nn.glu(x), x[:, :2] * _np_sigmoid(x[:, 2:]), rtol=1e-6)
    np.testing.assert_allclose(nn.glu(x, axis=0), x[:1] * _np_sigmoid(x[1:]), rtol=1e-6)
    with pytest.raises(ValueError, match="odd size 3"):
        nn.glu(np.ones((2, 3), F32))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        nn.relu([1.0, 2.0])


# --- the softmax family --------------------------------------------------------------------

def _np_logsumexp(a, axis=None, b=None, keepdims=False):
    a = np.asarray(a, F64)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(a - m) * (1 if b is None else b)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(e, axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("shape,axis", [((5,), None), ((3, 4), 1), ((3, 4), (0, 1)),
                                         ((2, 3, 4), 0), ((0, 3), 1), ((), None)])
def test_logsumexp_softmax_log_softmax(shape, axis):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 30).astype(F32)
    np.testing.assert_allclose(nn.logsumexp(x, axis), _np_logsumexp(x, axis), rtol=1e-5)
    np.testing.assert_allclose(nn.logsumexp(x, axis, keepdims=True),
                               _np_logsumexp(x, axis, keepdims=True), rtol=1e-5)
    if shape == ():
        return
    ax = -1 if axis is None else axis
    want = np.exp(x - _np_logsumexp(x, ax, keepdims=True))
    np.testing.assert_allclose(nn.softmax(x, axis=ax), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(nn.log_softmax(x, axis=ax),
                               x - _np_logsumexp(x, ax, keepdims=True), rtol=1e-5, atol=1e-5)


def test_logsumexp_weights_signs_and_masks():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], F32)
    b = np.array([[1.0, -2.0, 0.0], [3.0, 1.0, 0.5]], F32)
    out, sign = nn.logsumexp(a, axis=1, b=b, return_sign=True)
    total = np.sum(b * np.exp(a.astype(F64)), axis=1)
    np.testing.assert_allclose(out, np.log(np.abs(total)), rtol=1e-6)
    np.testing.assert_array_equal(sign, np.sign(total))
    assert np.isnan(nn.logsumexp(a, axis=1, b=b)[0])  # a negative sum without return_sign
    where = np.array([[True, False, True], [False, False, True]])
    np.testing.assert_allclose(nn.logsumexp(a, axis=1, where=where),
                               [np.logaddexp(1, 3), 4.0], rtol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(a, axis=1, where=where),
                               [np.logaddexp(1, 3) - np.log(2), 4.0], rtol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(a), _np_logsumexp(a) - np.log(6), rtol=1e-6)
    soft = nn.softmax(a, where=where)
    np.testing.assert_allclose(soft[0], [_np_sigmoid(-2.0), 0, _np_sigmoid(2.0)], rtol=1e-6)
    assert np.asarray(nn.log_softmax(a, where=where))[1, 0] == -np.inf


def test_infinite_entries_are_exact_and_differentiate_without_nans():
    x = np.array([-np.inf, 1.0, 2.0], F32)
    assert nn.logsumexp(x) == pytest.approx(np.logaddexp(1, 2))
    assert nn.softmax(x)[0] == 0.0
    for f in (nn.logsumexp, lambda v: nn.softmax(v)[1], lambda v: nn.log_softmax(v)[2]):
        for derivative in (plax.grad(f), plax.jacfwd(f), plax.hessian(f)):
            assert np.all(np.isfinite(derivative(x)))
        assert plax.grad(f)(x)[0] == 0.0
    np.testing.assert_allclose(plax.grad(nn.logsumexp)(x), nn.softmax(x), rtol=1e-6)
    # An all -inf slice: the value is -inf, the derivative NaN (log of zero), as JAX's.
    everything_masked = np.full(3, -np.inf, F32)
    assert nn.logsumexp(everything_masked) == -np.inf
    assert np.all(np.isnan(plax.grad(nn.logsumexp)(everything_masked)))
    big = np.array([1e30, 1e30], F32)
    np.testing.assert_allclose(nn.softmax(big), [0.5, 0.5])


@pytest.mark.parametrize("custom_jvp", [False, True])
def test_softmax_derivatives_follow_the_option(custom_jvp):
    x = np.array([[0.3, -1.2, 2.0], [1.0, 1.0, -0.5]], F64)
    where = np.array([[True, True, False], [True, True, True]])
    with plax.enable_x64(True), softmax_custom_jvp(custom_jvp):
        jaxpr = str(plax.make_jaxpr(lambda v: nn.softmax(v))(x))
        assert ("custom_jvp" in jaxpr) == custom_jvp
        check_grads(lambda v: nn.softmax(v, axis=1, where=where), (x,), order=2)
        check_grads(lambda v: nn.log_softmax(v, axis=0), (x,), order=2)
        check_grads(lambda v: nn.logsumexp(v, axis=1), (x,), order=2)


def test_softmax_batches_like_a_loop():
    x = np.random.default_rng(1).standard_normal((3, 2, 5)).astype(F32)
    mapped = plax.vmap(lambda v: nn.softmax(v, axis=0))(x)
    looped = np.stack([nn.softmax(v, axis=0) for v in x])
    np.testing.assert_allclose(mapped, looped, rtol=1e-6)


# --- one_hot, standardize ----------------------------------------------------------------

def test_one_hot():
    x = np.array([[0, 2], [-1, 3]], np.int32)
    out = nn.one_hot(x, 3)
    assert out.shape == (2, 2, 3) and out.dtype == F32
    np.testing.assert_array_equal(out, (x[..., None] == np.arange(3)).astype(F32))
    np.testing.assert_array_equal(nn.one_hot(x, 3, axis=0), np.moveaxis(out, -1, 0))
    assert nn.one_hot(x, 3, dtype=jnp.int8).dtype == np.int8
    assert nn.one_hot(np.zeros((0,), np.int32), 4).shape == (0, 4)
    np.testing.assert_array_equal(plax.jit(lambda v: nn.one_hot(v, 3))(x), out)
    with pytest.raises(TypeError, match="num_classes must be a concrete integer"):
        plax.jit(lambda n: nn.one_hot(x, n))(3)
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        nn.one_hot(x, 3, axis=3)


def test_standardize():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, 6)) * 3 + 5).astype(F64)
    with plax.enable_x64(True):
        want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        for algorithm in ("fast", "stable"):
            np.testing.assert_allclose(nn.standardize(x, algorithm=algorithm), want, rtol=1e-9)
        np.testing.assert_allclose(nn.standardize(x, axis=0, mean=1.0, variance=4.0),
                                   (x - 1) / np.sqrt(4 + 1e-5), rtol=1e-12)
        where = np.arange(6) < 4
        sub = x[:, :4]
        masked = (x - sub.mean(-1, keepdims=True)) / np.sqrt(sub.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(nn.standardize(x, where=where), masked, rtol=1e-9)
        check_grads(lambda v: nn.standardize(v, algorithm="stable"), (x[:2, :3],), order=2)
    with pytest.raises(ValueError, match="Unknown algorithm 'exact'"):
        nn.standardize(x, algorithm="exact")


# --- attention ---------------------------------------------------------------------------

def _np_attention(q, k, v, bias=None, mask=None, scale=None, causal=False, q_len=None,
                  kv_len=None, window=None):
    """Grouped-query attention written plainly: query head n reads key head n // G."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    G = N // K
    scale = 1 / np.sqrt(H) if scale is None else scale
    kk = np.repeat(k, G, axis=2)
    vv = np.repeat(v, G, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, kk).astype(F64) * scale
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool)
    if mask is not None:
        keep &= mask
    t, s = np.arange(T)[:, None], np.arange(S)[None, :]
    if causal:
        keep &= s <= t
    if window is not None:
        keep &= (t <= s + window[0]) & (t >= s - window[1])
    if q_len is not None:
        keep &= (np.arange(T)[None, None, :, None] < q_len[:, None, None, None])
    if kv_len is not None:
        keep &= (np.arange(S)[None, None, None, :] < kv_len[:, None, None, None])
    logits = np.where(keep, logits, -0.7 * np.finfo(F32).max)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    out = np.einsum("bnts,bsnh->btnh", probs, vv)
    if q_len is not None:
        out = out * (np.arange(T)[None, :, None, None] < q_len[:, None, None, None])
    return out


@pytest.fixture(scope="module")
def qkv():
    rng = np.random.default_rng(3)
    B, T, S, N, K, H = 2, 3, 4, 4, 2, 8
    return (rng.standard_normal((B, T, N, H)).astype(F32),
            rng.standard_normal((B, S, K, H)).astype(F32),
            rng.standard_normal((B, S, K, H)).astype(F32))


def test_attention_against_numpy(qkv):
    q, k, v = qkv
    rng = np.random.default_rng(4)
    bias = rng.standard_normal((1, 4, 3, 4)).astype(F32)
    mask = rng.random((2, 1, 3, 4)) < 0.8
    q_len, kv_len = np.array([3, 2], np.int32), np.array([4, 1], np.int32)
    variants = {
        "plain": {}, "scale": {"scale": 0.3}, "bias": {"bias": bias}, "mask": {"mask": mask},
        "causal": {"is_causal": True},
        "lengths": {"query_seq_lengths": q_len, "key_value_seq_lengths": kv_len},
        "window": {"local_window_size": (1, 0)},
        "everything": {"bias": bias, "mask": mask, "is_causal": True,
                       "key_value_seq_lengths": kv_len},
    }
    outs = plax.jit(lambda q, k, v: {n: nn.dot_product_attention(q, k, v, **kw)
                                     for n, kw in variants.items()})(q, k, v)
    for name, kw in variants.items():
        want = _np_attention(q, k, v, bias=kw.get("bias"), mask=kw.get("mask"),
                             scale=kw.get("scale"), causal=kw.get("is_causal", False),
                             q_len=kw.get("query_seq_lengths"),
                             kv_len=kw.get("key_value_seq_lengths"),
                             window=kw.get("local_window_size"))
        np.testing.assert_allclose(outs[name], want, rtol=2e-5, atol=2e-6, err_msg=name)


def test_attention_shapes_residual_and_derivatives(qkv):
    q, k, v = qkv
    out, lse = nn.dot_product_attention(q[0], k[0], v[0], return_residual=True)
    assert out.shape == q[0].shape and lse.shape == q[0].shape[:-1]
    np.testing.assert_allclose(out, _np_attention(q[:1], k[:1], v[:1])[0], rtol=2e-5,
                               atol=2e-6)
    logits = np.einsum("tnh,snh->nts", q[0], np.repeat(k[0], 2, axis=1)) / np.sqrt(8)
    np.testing.assert_allclose(lse, np.moveaxis(_np_logsumexp(logits, -1), 0, 1), rtol=1e-5)
    # The softmax runs in float32 whatever the inputs (as in JAX): check in float32.
    check_grads(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
                tuple(a[:1, :2] for a in qkv), order=1, eps=1e-2)


def test_attention_errors(qkv):
    q, k, v = qkv
    with pytest.raises(ValueError, match="value shape should be"):
        nn.dot_product_attention(q, k, v[:, :3])
    with pytest.raises(ValueError, match="query dtype should be float32"):
        nn.dot_product_attention(q.astype(np.float16), k, v)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(q[:, :, :3], k, v)
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        nn.dot_product_attention(q, k, v, mask=np.ones((1, 1, 3, 4), F32))
    with pytest.raises(ValueError, match="Unsupported implementation option"):
        nn.dot_product_attention(q, k, v, implementation="flash")
    with pytest.raises(NotImplementedError, match="cudnn"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")


# --- against JAX ---------------------------------------------------------------------------

_JAX_BODY = """
jax = lib
x = np.array([-np.inf, -3.0, -1.0, -0.0, 0.0, 0.5, 3.0, 6.0, 7.0, np.inf, np.nan], np.float32)
ints = np.array([-3, 0, 2, 7], np.int32)
half = x.astype(np.float16)
nn = jax.nn
names = ["relu", "relu6", "sigmoid", "softplus", "log_sigmoid", "soft_sign", "silu", "mish",
         "elu", "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu",
         "sparse_plus", "sparse_sigmoid", "squareplus", "log1mexp", "identity"]
CASES = {}
for n in names:
    CASES[n] = lambda n=n: getattr(nn, n)(x)
    CASES[n + "_f16"] = lambda n=n: getattr(nn, n)(half)
    CASES[n + "_scalar"] = lambda n=n: getattr(nn, n)(0.5)
CASES["relu_int"] = lambda: nn.relu(ints)
CASES["relu6_int"] = lambda: nn.relu6(ints)
CASES["gelu"] = lambda: nn.gelu(x)
CASES["gelu_exact"] = lambda: nn.gelu(x, approximate=False)
CASES["softmax_int"] = lambda: nn.softmax(ints)
CASES["softmax_inf"] = lambda: nn.softmax(np.array([-np.inf, 1.0, np.inf], np.float32))
CASES["softmax_masked"] = lambda: nn.softmax(x[1:9].reshape(2, 4), where=np.array(
    [True, False, True, True]))
CASES["log_softmax_masked"] = lambda: nn.log_softmax(x[1:9].reshape(2, 4), axis=0,
                                                     where=np.array([[True], [False]]))
CASES["logsumexp_b"] = lambda: nn.logsumexp(x[1:9], b=np.linspace(-1, 1, 8), return_sign=True)
CASES["logsumexp_int"] = lambda: nn.logsumexp(ints)
CASES["logmeanexp"] = lambda: nn.logmeanexp(x[1:9].reshape(2, 4), axis=1, keepdims=True)
CASES["grad_logsumexp"] = lambda: jax.grad(nn.logsumexp)(np.array([-np.inf, 1.0, 2.0]))
CASES["grad_relu"] = lambda: jax.vmap(jax.grad(nn.relu))(np.array([-1.0, 0.0, 1.0]))
CASES["one_hot"] = lambda: nn.one_hot(ints, 5)
CASES["one_hot_dtype"] = lambda: nn.one_hot(ints, 3, dtype=np.int8, axis=0)
CASES["standardize"] = lambda: nn.standardize(x[1:9].reshape(2, 4))
rng = np.random.default_rng(0)
q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
kv = rng.standard_normal((2, 5, 2, 8)).astype(np.float32)
CASES["attention"] = lambda: nn.dot_product_attention(
    q, kv, kv, is_causal=True, key_value_seq_lengths=np.array([5, 2], np.int32),
    local_window_size=2, return_residual=True)
bf16 = jax.numpy.bfloat16
attention_bf16 = nn.dot_product_attention(q.astype(bf16), kv.astype(bf16), kv.astype(bf16))
results["attention_bf16_stays_bf16"] = np.asarray(attention_bf16.dtype == bf16)
CASES["attention_bf16"] = lambda: attention_bf16.astype(np.float32)

for name, case in CASES.items():
    out = case()
    for i, o in enumerate(out if isinstance(out, tuple) else (out,)):
        results[f"{name}#{i}"] = np.asarray(o)
"""


@requires_jax
def test_matches_jax():
    f16_cases = ("relu", "sigmoid", "softplus", "log_sigmoid", "silu", "mish", "elu", "celu",
                 "selu", "hard_sigmoid", "hard_silu", "sparse_plus", "squareplus", "log1mexp",
                 "soft_sign")
    assert_same_as_jax(_JAX_BODY, {}, rtol=2e-6, atol=1e-6,
                       tolerances={f"{n}_f16#0": (2e-3, 2e-3) for n in f16_cases}
                       | {"attention_bf16#0": (2e-2, 2e-2), "attention#0": (1e-5, 1e-5)})
