"""Dot algorithms (`lax.DotAlgorithm`, `lax.DotAlgorithmPreset`) as `precision=`:
their lowering (casts, the `dot_general` algorithm attribute) and which ones CPU
accepts, against JAX in one subprocess; values, gradients and vmap against NumPy."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from tests.jax_reference import requires_jax, run_reference

P = lax.DotAlgorithmPreset
X = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 7
Y = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 3

# For each preset and input dtype: the dot_general/convert lines of the lowered
# module (SSA names dropped), or the lowering's exception; then the preset tables.
_REFERENCE = r"""
import re
from jax import lax
x = np.arange(6, dtype=np.float32).reshape(2, 3)
y = np.arange(12, dtype=np.float32).reshape(3, 4)
def lowered(f, *args):
    try:
        text = jax.jit(f).lower(*args).as_text()
    except Exception as e:
        return [type(e).__name__, str(e)]
    lines = [l for l in text.splitlines() if "dot_general" in l or "convert" in l]
    return [re.sub(r"%[\w#]+", "%", re.sub(r" loc\(.*\)", "", l)).strip() for l in lines]
def gpu_lowered(p, dt):
    try:
        e = jax.export.export(jax.jit(lambda a, b: lax.dot(a, b, precision=p)),
                              platforms=["cuda"])(x.astype(dt), y.astype(dt))
    except Exception as e:
        return [type(e).__name__, str(e)]
    return [re.sub(r"%[\w#]+", "%", re.sub(r" loc\(.*\)", "", l)).strip()
            for l in e.mlir_module().splitlines() if "stablehlo.dot_general" in l]
name = lambda t: None if t is None else np.dtype(t).name
result = {"cpu": {}, "tables": {}, "gpu": {}}
for p in lax.DotAlgorithmPreset:
    for dt in ("float32", "bfloat16", "float16"):
        d = jnp.dtype(dt)
        result["cpu"][f"{p.name} {dt}"] = lowered(
            lambda a, b: lax.dot(a, b, precision=p), x.astype(d), y.astype(d))
    result["tables"][p.name] = [
        p.value, repr(p), str(p),
        None if p.supported_lhs_types is None else [name(t) for t in p.supported_lhs_types],
        name(p.accumulation_type),
        [None if o is None else [name(t) for t in o] for o in (
            p.supported_output_types(np.float32, np.float32),
            p.supported_output_types(jnp.bfloat16, jnp.bfloat16),
            p.supported_output_types(np.float16, np.float16))]]
for p, dt in (("TF32_TF32_F32_X3", "float32"), ("BF16_BF16_BF16", "float32"),
              ("ANY_F8_ANY_F8_F32_FAST_ACCUM", "float8_e4m3fn"),
              ("ANY_F8_ANY_F8_F32", "float32")):
    result["gpu"][p] = gpu_lowered(lax.DotAlgorithmPreset[p], jnp.dtype(dt))
mixed = lambda a, b: lax.dot(a, b, precision="F32_F32_F32", preferred_element_type=np.float16)
result["mixed"] = lowered(mixed, x.astype(np.float16), y)
narrow = lambda a, b: lax.dot(a, b, precision=lax.DotAlgorithmPreset.DEFAULT,
                              preferred_element_type=np.int8)
result["narrow"] = lowered(narrow, x.astype(np.int32), y.astype(np.int32))
result["narrow_float"] = lowered(lambda a, b: lax.dot(a, b, preferred_element_type=jnp.bfloat16),
                                 x, y)
explicit = lax.DotAlgorithm(np.float32, np.float32, np.float32)
result["explicit"] = lowered(lambda a, b: lax.dot(a, b, precision=explicit), x, y)
result["conv"] = lowered(lambda a, b: lax.conv(a, b, (1,), "SAME", precision="BF16_BF16_F32"),
                         x[None], y[None, :, :2])
result["grad"] = str(jax.make_jaxpr(jax.grad(lambda a, b: lax.dot(
    a, b, precision=lax.DotAlgorithmPreset.BF16_BF16_F32_X6).sum()))(x, y))
PAIRS = [("bfloat16", "float16"), ("uint32", "int8"), ("int8", "uint8"), ("bool", "int8"),
         ("float16", "int32"), ("float8_e4m3fn", "float8_e5m2"), ("float32", "complex64")]
result["mixed_dtypes"] = [np.dtype(lax.dot(np.ones((2, 2), a), np.ones((2, 2), b)).dtype).name
                          for a, b in ((jnp.dtype(a), jnp.dtype(b)) for a, b in PAIRS)]
result["mixed_lowered"] = lowered(lambda a, b: lax.dot(a, b, preferred_element_type=np.float16),
                                  x.astype(np.float16), y)
narrow_grad = jax.grad(lambda a, b: lax.dot(a, b, preferred_element_type=jnp.bfloat16).astype(
    np.float32).sum(), argnums=(0, 1))(x / 7 + 0.01, y * 3.3)
result["narrow_grad"] = [np.asarray(g).tolist() for g in narrow_grad]
result["complex"] = np.asarray(lax.dot((x + 1j * x).astype(np.complex64), y.astype(np.complex64),
                                       precision="F32_F32_F32")).real.tolist()
"""


@pytest.fixture(scope="module")
def reference():
    return run_reference(_REFERENCE)


def _lowered(f, *args):
    try:
        text = plax.jit(f).lower(*args).as_text()
    except Exception as e:  # noqa: BLE001 - the class and message are compared
        return [type(e).__name__, str(e)]
    lines = [line for line in text.splitlines() if "dot_general" in line or "convert" in line]
    return [re.sub(r"%[\w#]+", "%", re.sub(r" loc\(.*\)", "", line)).strip()
            for line in lines]


@requires_jax
def test_cpu_lowering_of_every_preset_matches_jax(reference):
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32)
    y = y.reshape(3, 4)
    for key, expected in reference["cpu"].items():
        name, dt = key.split()
        d = jnp.dtype(dt)
        got = _lowered(lambda a, b, p=P[name]: lax.dot(a, b, precision=p), x.astype(d),
                       y.astype(d))
        assert got == expected, key


@requires_jax
def test_preset_tables_match_jax(reference):
    name = lambda t: None if t is None else np.dtype(t).name
    for p in P:
        got = [p.value, repr(p), str(p),
               None if p.supported_lhs_types is None else [name(t) for t in
                                                          p.supported_lhs_types],
               name(p.accumulation_type),
               [None if o is None else [name(t) for t in o] for o in (
                   p.supported_output_types(np.float32, np.float32),
                   p.supported_output_types(jnp.bfloat16, jnp.bfloat16),
                   p.supported_output_types(np.float16, np.float16))]]
        assert got == reference["tables"][p.name], p
    assert p.supported_rhs_types == p.supported_lhs_types


@requires_jax
def test_gpu_lowering_matches_jax(reference):
    """The attribute for backends that take every preset (exported for CUDA here)."""
    x, y = X, Y
    for name, expected in reference["gpu"].items():
        d = jnp.dtype("float8_e4m3fn" if "FAST" in name else "float32")
        try:
            exported = plax.export.export(
                plax.jit(lambda a, b, p=P[name]: lax.dot(a, b, precision=p)),
                platforms=["cuda"])(x.astype(d), y.astype(d))
            got = [re.sub(r"%[\w#]+", "%", re.sub(r" loc\(.*\)", "", line)).strip()
                   for line in exported.mlir_module().splitlines()
                   if "stablehlo.dot_general" in line]
        except ValueError as e:
            got = [type(e).__name__, str(e)]
        assert got == expected, name


@requires_jax
def test_algorithm_cases_match_jax(reference):
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32)
    y = y.reshape(3, 4)
    mixed = lambda a, b: lax.dot(a, b, precision="F32_F32_F32",
                                 preferred_element_type=np.float16)
    assert _lowered(mixed, x.astype(np.float16), y) == reference["mixed"]
    narrow = lambda a, b: lax.dot(a, b, precision=P.DEFAULT, preferred_element_type=np.int8)
    assert _lowered(narrow, x.astype(np.int32), y.astype(np.int32)) == reference["narrow"]
    # without an algorithm too, float products may be narrower than their inputs
    narrow_float = lambda a, b: lax.dot(a, b, preferred_element_type=jnp.bfloat16)
    assert _lowered(narrow_float, x, y) == reference["narrow_float"]
    explicit = lax.DotAlgorithm(np.float32, np.float32, np.float32)
    assert _lowered(lambda a, b: lax.dot(a, b, precision=explicit), x, y) == reference[
        "explicit"]
    conv = lambda a, b: lax.conv(a, b, (1,), "SAME", precision="BF16_BF16_F32")
    conv_lines = _lowered(conv, x[None], y[None, :, :2])
    assert [line for line in conv_lines if "convolution" in line] == [
        line for line in reference["conv"] if "convolution" in line]
    complex_out = lax.dot((x + 1j * x).astype(np.complex64), y.astype(np.complex64),
                          precision="F32_F32_F32")
    np.testing.assert_allclose(np.asarray(complex_out).real, reference["complex"], rtol=1e-6)


@requires_jax
def test_mixed_and_narrow_products_match_jax(reference):
    """Without an algorithm too: the product type of mixed operands (XLA's more precise
    one, not their promotion), their conversion to the result's dtype, and the
    cotangent products in the preferred type."""
    pairs = [("bfloat16", "float16"), ("uint32", "int8"), ("int8", "uint8"), ("bool", "int8"),
             ("float16", "int32"), ("float8_e4m3fn", "float8_e5m2"), ("float32", "complex64")]
    got = [lax.dot(np.ones((2, 2), jnp.dtype(a)), np.ones((2, 2), jnp.dtype(b))).dtype.name
           for a, b in pairs]
    assert got == reference["mixed_dtypes"]
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(12, dtype=np.float32)
    y = y.reshape(3, 4)
    mixed = lambda a, b: lax.dot(a, b, preferred_element_type=np.float16)
    # JAX also emits a no-op convert (`convert % : tensor<...>`, one type) of the
    # operand already in the result's dtype
    assert _lowered(mixed, x.astype(np.float16), y) == [
        line for line in reference["mixed_lowered"] if "convert % : tensor<" not in line]
    grads = plax.grad(lambda a, b: lax.dot(a, b, preferred_element_type=jnp.bfloat16).astype(
        np.float32).sum(), argnums=(0, 1))(x / 7 + 0.01, y * 3.3)
    for got, expected in zip(grads, reference["narrow_grad"]):
        np.testing.assert_array_equal(np.asarray(got), expected)


@requires_jax
def test_transposed_dots_keep_the_algorithm(reference):
    jaxpr = str(plax.make_jaxpr(plax.grad(lambda a, b: lax.dot(
        a, b, precision=P.BF16_BF16_F32_X6).sum()))(X, Y))
    assert jaxpr.count("precision=BF16_BF16_F32_X6") == reference["grad"].count(
        "precision=BF16_BF16_F32_X6") == 2


@pytest.mark.parametrize("preset", sorted(
    [P.DEFAULT, P.F16_F16_F16, P.F32_F32_F32, P.F64_F64_F64, P.BF16_BF16_F32,
     P.BF16_BF16_F32_X3, P.BF16_BF16_F32_X6], key=lambda p: p.value), ids=str)
def test_cpu_presets_compute_the_product(preset):
    out = plax.jit(lambda a, b: lax.dot(a, b, precision=preset))(X, Y)
    assert out.dtype == np.float32
    # the f16 preset rounds operands and sums to half precision (CPU ignores the rest)
    tol = 2e-3 if preset is P.F16_F16_F16 else 1e-6
    np.testing.assert_allclose(np.asarray(out), X @ Y, rtol=tol, atol=tol)


def test_unsupported_on_cpu_raises_value_error_eager_and_jitted():
    for precision in (P.TF32_TF32_F32, P.BF16_BF16_BF16, P.ANY_F8_ANY_F8_F32,
                      lax.DotAlgorithm(np.float32, np.float32, np.float32)):
        message = re.escape(f"The precision '{precision}' is not supported by dot_general "
                            "on CPU")
        with pytest.raises(ValueError, match=message):
            lax.dot(X, Y, precision=precision)
        with pytest.raises(ValueError, match=message):
            plax.jit(lambda a, b, p=precision: jnp.matmul(a, b, precision=p)).lower(X, Y)


def test_precision_forms_and_errors():
    assert lax.DotAlgorithm(np.float32, np.float32, np.float32) == (
        np.float32, np.float32, np.float32, 1, 1, 1, False)
    assert lax.DotAlgorithm._fields[-1] == "allow_imprecise_accumulation"
    for bad in ("f32_f32_f32", "nope", (P.F32_F32_F32, P.F32_F32_F32), 3):
        with pytest.raises(ValueError, match="DotAlgorithmPreset or its name"):
            lax.dot(X, Y, precision=bad)
    with plax.default_matmul_precision("BF16_BF16_F32_X3"):
        text = plax.jit(lambda a, b: a @ b).lower(X, Y).as_text()
    assert "num_primitive_operations = 3" in text
    with plax.default_matmul_precision("TF32_TF32_F32"), pytest.raises(ValueError,
                                                                     match="TF32_TF32_F32"):
        plax.jit(lambda a, b: a @ b)(X, Y)


def test_numpy_products_take_presets():
    f64 = P.F64_F64_F64
    products = [
        (jnp.dot(X, Y, precision=f64), X @ Y),
        (jnp.matmul(X, Y, precision="F64_F64_F64"), X @ Y),
        (jnp.einsum("ij,jk->ik", X, Y, precision=f64), X @ Y),
        (jnp.tensordot(X, Y, 1, precision=f64), X @ Y),
        (jnp.inner(X, Y.T, precision=f64), X @ Y),
        (jnp.vdot(X, X, precision="F32_F32_F32"), np.vdot(X, X)),
    ]
    for got, expected in products:
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)
    # XLA's CPU emitter for a vector-vector dot takes only F32_F32_F32 (so in JAX too)
    with pytest.raises(plax.errors.JaxRuntimeError, match="ALG_DOT_F64_F64_F64"):
        jnp.vdot(X, X, precision=f64)


def test_gradient_and_vmap_with_an_algorithm():
    bf16 = ml_dtypes.bfloat16
    f = lambda a, b: lax.dot(a, b, precision=P.BF16_BF16_F32,
                             preferred_element_type=np.float32).sum()
    ga, gb = plax.grad(f, argnums=(0, 1))(X.astype(bf16), Y.astype(bf16))
    assert ga.dtype == gb.dtype == bf16
    np.testing.assert_allclose(np.asarray(ga, np.float32),
                               np.ones((2, 4)) @ Y.astype(bf16).astype(np.float32).T, rtol=1e-2)
    batched = plax.vmap(lambda a, b: lax.dot(a, b, precision=P.F32_F32_F32))
    jaxpr = str(plax.make_jaxpr(batched)(np.stack([X, X]), np.stack([Y, Y])))
    assert "precision=F32_F32_F32" in jaxpr
    np.testing.assert_allclose(np.asarray(batched(np.stack([X, 2 * X]), np.stack([Y, Y]))),
                               np.stack([X @ Y, 2 * X @ Y]), rtol=1e-6)
