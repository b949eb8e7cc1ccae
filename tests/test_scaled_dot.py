"""Block-scaled dots: `lax.scaled_dot` against JAX (values, composite lowering,
vmap, errors) and NumPy; `nn.scaled_matmul` and `nn.scaled_dot_general` against a JAX
composition of its quantization and `lax.scaled_dot` (JAX's own `scaled_matmul`
runs only on GPU), with the cotangent quantized in the gradient."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from tests.jax_reference import requires_jax, run_reference

F8, E8M0 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu
_rng = np.random.RandomState(0)
A = _rng.randn(2, 64).astype(np.float32)
B = _rng.randn(64, 3).astype(np.float32)
SA = (2.0 ** _rng.randint(-3, 3, (2, 2))).astype(np.float32)
SB = (2.0 ** _rng.randint(-3, 3, (2, 3))).astype(np.float32)
# scaled_dot_general operands: (batch, rows, contracting), 32 a side for mxfp8 blocks
L = (_rng.randn(1, 32, 32) * np.exp(_rng.randn(1, 32, 1))).astype(np.float32)
R = _rng.randn(1, 32, 32).astype(np.float32)
G = _rng.randn(1, 32, 32).astype(np.float32)
MATMUL = (((2,), (2,)), ((0,), (0,)))
_ERRORS = {"TypeError": TypeError, "ValueError": ValueError,
           "NotImplementedError": NotImplementedError}

_REFERENCE = r"""
import re
from jax import lax
from jax._src.cudnn.scaled_matmul_stablehlo import quantize
a, b, sa, sb, l, r, g = (np.asarray(v, np.float32) for v in INPUTS)
f8, e8 = jnp.float8_e4m3fn, jnp.float8_e8m0fnu
A8, B8, SA8, SB8 = a.astype(f8), b.astype(f8), sa.astype(e8), sb.astype(e8)
def sd(*xs, **kw):
    return lax.scaled_dot(xs[0], xs[1], lhs_scale=xs[2], rhs_scale=xs[3], **kw)
def error(f):
    try:
        f()
    except Exception as e:
        return type(e).__name__
f32 = lambda v: np.asarray(v).astype(np.float32).tolist()
result = {
    "bf16": f32(sd(A8, B8, SA8, SB8)),
    "f32": f32(sd(A8, B8, SA8, SB8, preferred_element_type=np.float32)),
    "unscaled": f32(lax.scaled_dot(a, b)),
    "batched": f32(lax.scaled_dot(a[None], b[None], preferred_element_type=np.float32)),
    "vmap": f32(jax.vmap(lambda x, s: sd(x, B8, s, SB8, preferred_element_type=np.float32))(
        jnp.stack([A8, A8]), jnp.stack([SA8, SA8]))),
    "text": [re.sub(r"%[\w#]+", "%", l).strip() for l in jax.jit(sd).lower(
        A8, B8, SA8, SB8).as_text().splitlines() if "composite" in l],
    "errors": [error(f) for f in (
        lambda: lax.scaled_dot(a, b, lhs_scale=sa[None]),
        lambda: lax.scaled_dot(a[0], b[:, 0]),
        lambda: lax.scaled_dot(a, b, lhs_scale=np.ones((2, 3), f8)),
        lambda: lax.scaled_dot(a, b, lhs_scale=np.ones((2, 64), f8)),
        lambda: lax.scaled_dot(a, b, lhs_scale=np.ones((3, 2), f8)),
        lambda: lax.scaled_dot(a, b[:32]),
        lambda: lax.scaled_dot(a[None], jnp.stack([b, b])),
        lambda: jax.grad(lambda x: lax.scaled_dot(x, b).astype(np.float32).sum())(a))],
    "matmul_errors": [error(f) for f in (
        lambda: jax.nn.scaled_matmul(l[0], r, l, r),
        lambda: jax.nn.scaled_matmul(l, r[:, :, :16], l, r),
        lambda: jax.nn.scaled_matmul(l, r, l[..., :2], r[..., :1]),
        lambda: jax.nn.scaled_matmul(l, r, l[:, :2, :1], r[..., :1]),
        lambda: jax.nn.get_scaled_dot_general_config("fp8"))],
    "quantized": {}, "forward": {},
}
mx = jax.nn.get_scaled_dot_general_config("mxfp8")
nv = jax.nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], np.float32))
result["configs"] = [[c.mode, c.block_size, np.dtype(c.data_type).name,
                      np.dtype(c.scale_type).name, c.infer_only] for c in (mx, nv)]
for name, cfg in (("mxfp8", mx), ("nvfp4", nv)):
    q, s = quantize(jnp.asarray(l), cfg)
    result["quantized"][name] = [f32(q), f32(s), np.dtype(q.dtype).name, np.dtype(s.dtype).name]
    qr, sr = quantize(jnp.asarray(r), cfg)
    out = lax.scaled_dot(q, qr, lhs_scale=s, rhs_scale=sr, dimension_numbers=MATMUL,
                         preferred_element_type=np.float32)
    if name == "nvfp4":
        out = out * 0.25
    result["forward"][name] = f32(out)
# d/dlhs of sum(g * (l . r)) with mxfp8 cotangents: quantized g times quantized r^T
qg, sg = quantize(jnp.asarray(g), mx)
qt, st = quantize(jnp.asarray(r).transpose(0, 2, 1), mx)
result["grad_lhs"] = f32(lax.scaled_dot(qg, qt, lhs_scale=sg, rhs_scale=st,
                                        dimension_numbers=MATMUL,
                                        preferred_element_type=np.float32))
"""


@pytest.fixture(scope="module")
def reference():
    inputs = [v.tolist() for v in (A, B, SA, SB, L, R, G)]
    return run_reference(f"INPUTS = {inputs!r}\nMATMUL = {MATMUL!r}\n" + _REFERENCE)


def _scaled(*xs, **kw):
    return lax.scaled_dot(xs[0], xs[1], lhs_scale=xs[2], rhs_scale=xs[3], **kw)


A8, B8, SA8, SB8 = A.astype(F8), B.astype(F8), SA.astype(E8M0), SB.astype(E8M0)


def _numpy_scaled_dot(a, b, sa, sb):
    """(a * sa repeated over its blocks of 32) @ (b * sb likewise), in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    sa, sb = sa.astype(np.float64), sb.astype(np.float64)
    return (a * np.repeat(sa, 32, axis=1)) @ (b * np.repeat(sb, 32, axis=0))


@requires_jax
def test_scaled_dot_matches_jax_and_numpy(reference):
    out = _scaled(A8, B8, SA8, SB8)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(out, np.float32), reference["bf16"])
    f32 = plax.jit(lambda *xs: _scaled(*xs, preferred_element_type=np.float32))(
        A8, B8, SA8, SB8)
    np.testing.assert_array_equal(np.asarray(f32), reference["f32"])
    np.testing.assert_allclose(np.asarray(f32), _numpy_scaled_dot(A8, B8, SA8, SB8),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(lax.scaled_dot(A, B), np.float32),
                                  reference["unscaled"])
    batched = lax.scaled_dot(A[None], B[None], preferred_element_type=np.float32)
    np.testing.assert_array_equal(np.asarray(batched), reference["batched"])


@requires_jax
def test_scaled_dot_vmap_and_lowering_match_jax(reference):
    vmapped = plax.vmap(lambda x, s: _scaled(x, B8, s, SB8, preferred_element_type=np.float32))
    np.testing.assert_array_equal(np.asarray(vmapped(np.stack([A8, A8]), np.stack([SA8, SA8]))),
                                  reference["vmap"])
    text = plax.jit(_scaled).lower(A8, B8, SA8, SB8).as_text()
    lines = [re.sub(r"%[\w#]+", "%", line).strip() for line in text.splitlines()
             if "composite" in line]
    assert [re.sub(r" loc\(.*\)", "", line) for line in lines] == reference["text"]


@requires_jax
def test_scaled_dot_errors_match_jax(reference):
    cases = [
        (lambda: lax.scaled_dot(A, B, lhs_scale=SA[None]), "same rank"),
        (lambda: lax.scaled_dot(A[0], B[:, 0]), "0-rank and 1-rank"),
        (lambda: lax.scaled_dot(A, B, lhs_scale=np.ones((2, 3), F8)), "divisible by"),
        (lambda: lax.scaled_dot(A, B, lhs_scale=np.ones((2, 64), F8)), "at least 2"),
        (lambda: lax.scaled_dot(A, B, lhs_scale=np.ones((3, 2), F8)), r"float32\[2,64\]"),
        (lambda: lax.scaled_dot(A, B[:32]), "does not match RHS contracting dim 0 of size 32"),
        (lambda: lax.scaled_dot(A[None], np.stack([B, B])), r"\(1, 2, 1, 2\)"),
        (lambda: plax.grad(lambda x: lax.scaled_dot(x, B).astype(np.float32).sum())(A),
         "Differentiation rule for 'scaled_dot'"),
    ]
    for (case, message), expected in zip(cases, reference["errors"]):
        with pytest.raises(_ERRORS[expected], match=message):
            case()
    with pytest.raises(TypeError, match="floating dtype"):
        lax.scaled_dot(A, B, preferred_element_type=np.int32)


@requires_jax
def test_quantization_and_forward_match_jax(reference):
    from plax_stdlib.nn.scaled_matmul import quantize
    mx = plax.nn.get_scaled_dot_general_config("mxfp8")
    nv = plax.nn.get_scaled_dot_general_config("nvfp4", jnp.array([0.5], np.float32))
    assert [[c.mode, c.block_size, np.dtype(c.data_type).name, np.dtype(c.scale_type).name,
             c.infer_only] for c in (mx, nv)] == reference["configs"]
    for name, cfg in (("mxfp8", mx), ("nvfp4", nv)):
        q, s = plax.jit(lambda x, cfg=cfg: quantize(x, cfg))(L)
        data, scales, data_type, scale_type = reference["quantized"][name]
        assert (q.dtype.name, s.dtype.name) == (data_type, scale_type)
        np.testing.assert_array_equal(np.asarray(q).astype(np.float32), data)
        np.testing.assert_array_equal(np.asarray(s).astype(np.float32), scales)
        out = plax.jit(lambda x, y, cfg=cfg: plax.nn.scaled_dot_general(
            x, y, MATMUL, configs=[cfg] * 3))(L, R)
        np.testing.assert_allclose(np.asarray(out), reference["forward"][name], rtol=1e-6)
        # block quantization keeps the product close to the exact one
        np.testing.assert_allclose(np.asarray(out), np.einsum("bmk,bnk->bmn", L, R),
                                   rtol=0.3, atol=0.3 * np.abs(L).max() * 8)


@requires_jax
def test_gradient_quantizes_the_cotangent(reference):
    mx = [plax.nn.get_scaled_dot_general_config("mxfp8")] * 3
    f = lambda x, y: jnp.sum(G * plax.nn.scaled_dot_general(x, y, MATMUL, configs=mx))
    grad_lhs, grad_rhs = plax.jit(plax.grad(f, argnums=(0, 1)))(L, R)
    np.testing.assert_allclose(np.asarray(grad_lhs), reference["grad_lhs"], rtol=1e-6)
    assert grad_rhs.shape == R.shape
    # operands the quantization keeps exactly: the gradient of the plain product
    ints = lambda shape: _rng.randint(-8, 9, shape).astype(np.float32)
    x, y = ints((32, 32)), ints((32, 32))
    unbatched = (((1,), (0,)), ((), ()))
    dx, dy = plax.jit(plax.grad(lambda x, y: plax.nn.scaled_dot_general(
        x, y, unbatched, configs=mx).sum(), argnums=(0, 1)))(x, y)
    np.testing.assert_array_equal(np.asarray(dx), np.ones((32, 32)) @ y.T)
    np.testing.assert_array_equal(np.asarray(dy), x.T @ np.ones((32, 32)))


@requires_jax
def test_scaled_matmul_and_config_errors_match_jax(reference):
    cases = [lambda: plax.nn.scaled_matmul(L[0], R, L, R),
             lambda: plax.nn.scaled_matmul(L, R[:, :, :16], L, R),
             lambda: plax.nn.scaled_matmul(L, R, L[..., :2], R[..., :1]),
             lambda: plax.nn.scaled_matmul(L, R, L[:, :2, :1], R[..., :1]),
             lambda: plax.nn.get_scaled_dot_general_config("fp8")]
    for case, expected in zip(cases, reference["matmul_errors"]):
        with pytest.raises(_ERRORS[expected]):
            case()
    with pytest.raises(TypeError, match="float32, bfloat16 or float16, got int32"):
        plax.nn.scaled_dot_general(L, R, MATMUL, np.int32, configs=[
            plax.nn.get_scaled_dot_general_config("mxfp8")] * 3)
    from plax_stdlib.nn.scaled_matmul import BlockScaleConfig
    wrong = BlockScaleConfig("mxfp8", 32, F8, F8, None, False)
    with pytest.raises(ValueError, match="mxfp8 config needs float8_e8m0fnu scales"):
        plax.nn.scaled_dot_general(L, R, MATMUL, configs=[wrong] * 3)
    with pytest.raises(ValueError, match="not a multiple of the mxfp8 block size 32"):
        plax.nn.scaled_dot_general(L[..., :16], R[..., :16], MATMUL, configs=[
            plax.nn.get_scaled_dot_general_config("mxfp8")] * 3)


def test_scaled_matmul_computes_the_block_scaled_product():
    a, b = np.array([1, 2, 3.0]).reshape(1, 1, 3), np.array([4, 5, 6.0]).reshape(1, 1, 3)
    half = np.full((1, 1, 1), 0.5, np.float32)
    out = plax.nn.scaled_matmul(a, b, half, half)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), [[[8.0]]])
    plain = plax.nn.scaled_dot_general(L, R, MATMUL)  # no configs: dot_general
    np.testing.assert_allclose(np.asarray(plain), np.einsum("bmk,bnk->bmn", L, R),
                               rtol=1e-5, atol=1e-5)
    with pytest.warns(DeprecationWarning, match="implementation"):
        plax.nn.scaled_dot_general(L, R, MATMUL, implementation="cudnn")
