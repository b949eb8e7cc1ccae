"""`plax.ffi`: the example C++ kernel (examples/ffi_rms_norm, built against jaxlib's FFI
headers by the install command) registered and called eagerly and under jit, vmap
(each vmap_method) and grad through its custom_vjp; ctypes handlers through
`pycapsule`; type ids; attributes, layouts and aliases; bad input; and the same
kernel called by JAX in a subprocess."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jax_differential import requires_jax

import plax
import plax.ffi

rms_norm_pkg = pytest.importorskip("rms_norm", reason="install examples/ffi_rms_norm")
from rms_norm import _kernels, rms_norm  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5)).astype(np.float32)


def reference(x, eps=1e-5):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def reference_grad(x, ct, eps=1e-5):
    """d/dx of sum(ct * rms_norm(x)), by the formula: r*ct - r^3 * x * mean(x*ct)."""
    x, ct = np.asarray(x, np.float64), np.asarray(ct, np.float64)
    r = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return r * ct - r ** 3 * x * np.mean(x * ct, axis=-1, keepdims=True)


def call_rms_norm(target="rms_norm", vmap_method=None):
    return lambda x: plax.ffi.ffi_call(target, plax.ShapeDtypeStruct(x.shape, x.dtype),
                                       vmap_method=vmap_method)(x, eps=np.float32(1e-5))


def test_include_dir_has_the_ffi_headers():
    assert os.path.isfile(os.path.join(plax.ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))


def test_rms_norm_eager_jit_vmap_grad():
    np.testing.assert_allclose(rms_norm(X), reference(X), rtol=1e-5)
    np.testing.assert_allclose(plax.jit(rms_norm)(X), reference(X), rtol=1e-5)
    batch = np.stack([X, 3 * X[::-1]])
    np.testing.assert_allclose(plax.vmap(rms_norm)(batch), reference(batch), rtol=1e-5)
    ct = RNG.normal(size=X.shape).astype(np.float32)
    grad = plax.jit(plax.grad(lambda v: (rms_norm(v) * ct).sum()))(X)
    np.testing.assert_allclose(grad, reference_grad(X, ct), rtol=1e-4, atol=1e-5)
    # the analytic formula itself, against central differences in float64
    h, e = 1e-6, np.zeros_like(X, np.float64)
    e[1, 2] = h
    fd = ((reference(X + e) - reference(X - e)) * ct).sum() / (2 * h)
    np.testing.assert_allclose(reference_grad(X, ct)[1, 2], fd, rtol=1e-6)
    vgrad = plax.vmap(plax.grad(lambda v: (rms_norm(v) * ct[0]).sum()))(X)
    np.testing.assert_allclose(vgrad, reference_grad(X, ct[:1].repeat(3, 0)), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_methods_agree(method):
    batch = np.stack([X, X + 1])
    out = plax.jit(plax.vmap(call_rms_norm(vmap_method=method)))(batch)
    np.testing.assert_allclose(out, reference(batch), rtol=1e-5)


def test_lowering_names_target_attributes_and_layouts():
    text = plax.jit(call_rms_norm()).lower(X).as_text()
    assert "stablehlo.custom_call @rms_norm(%arg0)" in text
    assert "mhlo.backend_config = {eps = 9.99999974E-6 : f32}" in text
    assert "operand_layouts = [dense<[1, 0]> : tensor<2xindex>]" in text
    f = plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct(X.T.shape, X.dtype),
                          input_layouts=[(1, 0)], output_layouts=(1, 0))
    text = plax.jit(lambda x: f(x, eps=np.float32(1e-5))).lower(X.T).as_text()
    assert "operand_layouts = [dense<[0, 1]>" in text and "result_layouts = [dense<[0, 1]>" in text


def test_attribute_types_in_the_lowering():
    def call(x):
        return plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct(x.shape, x.dtype))(
            x, i=3, f=0.5, b=True, s="name", a=np.arange(2, dtype=np.int32),
            d={"k": np.float32(1)})
    text = plax.jit(call).lower(X).as_text()
    for piece in ("i = 3 : i64", "f = 5.000000e-01 : f64", "b = true", 's = "name"',
                  "a = dense<[0, 1]> : tensor<2xi32>", "d = {k = 1.000000e+00 : f32}"):
        assert piece in text, piece


def test_ctypes_handler_through_pycapsule():
    library = ctypes.CDLL(_kernels.__file__)
    plax.ffi.register_ffi_target("rms_norm_from_ctypes", plax.ffi.pycapsule(library.RmsNorm))
    np.testing.assert_allclose(plax.jit(call_rms_norm("rms_norm_from_ctypes"))(X),
                               reference(X), rtol=1e-5)
    with pytest.raises(ValueError, match="null function pointer"):
        plax.ffi.pycapsule(ctypes.cast(None, ctypes.CFUNCTYPE(None)))


def test_register_ffi_type_id_fills_the_id():
    assert _kernels.state_type_id_value() == 0
    plax.ffi.register_ffi_type_id("rms_norm_state", _kernels.state_type_id())
    assert _kernels.state_type_id_value() != 0


def test_input_output_aliases_and_side_effects():
    f = plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct(X.shape, X.dtype),
                          input_output_aliases={0: 0})
    text = plax.jit(lambda x: f(x, eps=np.float32(1e-5))).lower(X).as_text()
    assert "output_operand_aliases = [#stablehlo.output_operand_alias" in text
    kept = plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct(X.shape, X.dtype),
                             has_side_effect=True)
    text = plax.jit(lambda x: (kept(x, eps=np.float32(1e-5)), x)[1]).lower(X).as_text()
    assert "custom_call @rms_norm" in text and "has_side_effect = true" in text
    text = plax.jit(lambda x: (call_rms_norm()(x), x)[1]).lower(X).as_text()
    assert "custom_call" not in text  # no side effect: an unused call is pruned


def test_bad_input():
    shape = plax.ShapeDtypeStruct(X.shape, X.dtype)
    with pytest.raises(ValueError, match="'shape' and 'dtype'"):
        plax.ffi.ffi_call("rms_norm", [(3, 5)])
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        plax.ffi.ffi_call("rms_norm", shape, vmap_method="parallel")
    with pytest.raises(ValueError, match="legacy_backend_config"):
        plax.ffi.ffi_call("rms_norm", shape, legacy_backend_config="x")
    with pytest.raises(ValueError, match="cannot be differentiated"):
        plax.grad(lambda x: call_rms_norm()(x).sum())(X)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        plax.vmap(call_rms_norm())(np.stack([X, X]))
    with pytest.raises(ValueError, match="input_output_aliases"):
        plax.ffi.ffi_call("rms_norm", shape, input_output_aliases={1: 0})(X)
    with pytest.raises(ValueError, match="input_output_aliases"):
        plax.ffi.ffi_call("rms_norm", plax.ShapeDtypeStruct((5,), X.dtype),
                          input_output_aliases={0: 0})(X)
    with pytest.raises(ValueError, match="number of input arguments"):
        plax.ffi.ffi_call("rms_norm", shape, input_layouts=[None, None])(X)
    with pytest.raises(ValueError, match="not a permutation"):
        plax.ffi.ffi_call("rms_norm", shape, input_layouts=[(0, 0)])(X)
    with pytest.raises(TypeError, match="Non-hashable keyword argument"):
        plax.ffi.ffi_call("rms_norm", shape)(X, eps=[np.float32(1)])
    with pytest.raises(TypeError, match="float32"):
        rms_norm(X.astype(np.int32))
    with pytest.raises(TypeError, match="non-empty string"):
        plax.ffi.register_ffi_target("", _kernels.registrations()["rms_norm"])


@requires_jax
def test_same_results_as_jax_with_the_same_kernel(tmp_path):
    """JAX calls the kernel (loaded by ctypes: no plax in that process) through its own
    `jax.ffi`; its results match plax's, under jit and vmap."""
    np.save(tmp_path / "x.npy", X)
    script = textwrap.dedent(f"""
        import ctypes, numpy as np, jax
        lib = ctypes.CDLL({_kernels.__file__!r})
        jax.ffi.register_ffi_target("rms_norm", jax.ffi.pycapsule(lib.RmsNorm), platform="cpu")
        x = np.load({str(tmp_path / "x.npy")!r})
        def f(v):
            out = jax.ShapeDtypeStruct(v.shape, v.dtype)
            return jax.ffi.ffi_call("rms_norm", out, vmap_method="expand_dims")(
                v, eps=np.float32(1e-5))
        np.save({str(tmp_path / "jit.npy")!r}, np.asarray(jax.jit(f)(x)))
        np.save({str(tmp_path / "vmap.npy")!r}, np.asarray(jax.vmap(f)(np.stack([x, 2 * x]))))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    mine = call_rms_norm(vmap_method="expand_dims")
    np.testing.assert_array_equal(plax.jit(mine)(X), np.load(tmp_path / "jit.npy"))
    np.testing.assert_array_equal(plax.vmap(mine)(np.stack([X, 2 * X])),
                                  np.load(tmp_path / "vmap.npy"))
