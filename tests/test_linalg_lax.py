"""`plax.lax.linalg`: every primitive against NumPy/SciPy on float32, float64 (x64),
complex64 and complex128, on single matrices, batches and empty shapes; the LAPACK
custom calls of the CPU lowering and the generic lowerings; derivatives
(`check_grads`, orders 1 and 2, both modes; gauge-invariant functions of eigh and
svd); vmap against a loop; and bad input.

Each dtype's checks run in one jitted function, so the file costs a handful of
compilations per dtype.
"""
from __future__ import annotations

import numpy as np
import pytest
from matrix_samples import hermitian_pd, sample
import scipy.linalg as sla

import plax
import plax.numpy as jnp
from plax import lax
from plax.lax import linalg
from plax.test_util import check_grads

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
X64 = {np.dtype(np.float64), np.dtype(np.complex128)}
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-10,
       np.dtype(np.complex64): 2e-4, np.dtype(np.complex128): 1e-10}


def close(got, want, dtype, scale=1.0):
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[np.dtype(dtype)] * scale,
                               atol=TOL[np.dtype(dtype)] * scale)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


# --- results against NumPy/SciPy -----------------------------------------------------------

SQUARE = (2, 4, 4)
TALL = (3, 5, 3)
WIDE = (3, 4)


def _decompositions(square, tall, wide, hpd, b):
    return {
        "cholesky": linalg.cholesky(hpd),
        "lu_square": linalg.lu(square), "lu_tall": linalg.lu(tall), "lu_wide": linalg.lu(wide),
        "qr_tall": linalg.qr(tall, full_matrices=False), "qr_full": linalg.qr(tall),
        "qr_wide": linalg.qr(wide), "qr_pivoted": linalg.qr(tall, pivoting=True),
        "eigh": linalg.eigh(hpd), "eigh_upper": linalg.eigh(hpd, lower=False,
                                                            symmetrize_input=False),
        "eigh_subset": linalg.eigh(hpd, subset_by_index=(1, 3)),
        "svd_tall": linalg.svd(tall, full_matrices=False), "svd_full": linalg.svd(tall),
        "svd_wide": linalg.svd(wide), "svd_values": linalg.svd(square, compute_uv=False),
        "svd_qr": linalg.svd(square, algorithm=linalg.SvdAlgorithm.QR),
        "eig": linalg.eig(square),
        "schur": linalg.schur(square), "hessenberg": linalg.hessenberg(square),
        "tridiagonal": linalg.tridiagonal(hpd),
        "trisolve_left": linalg.triangular_solve(square, b, left_side=True, lower=True),
        "trisolve_right": linalg.triangular_solve(square, lax.transpose(b, (0, 2, 1)),
                                                  left_side=False, transpose_a=True,
                                                  conjugate_a=True, unit_diagonal=True),
        "trisolve_vector": linalg.triangular_solve(square, b[..., 0], left_side=True),
    }


@pytest.fixture(scope="module", params=DTYPES, ids=lambda d: np.dtype(d).name)
def computed(request):
    dtype = request.param
    inputs = (sample(dtype, SQUARE), sample(dtype, TALL, 1), sample(dtype, WIDE, 2),
              hermitian_pd(dtype, SQUARE, 3), sample(dtype, (2, 4, 2), 4))
    with plax.enable_x64(np.dtype(dtype) in X64):
        out = plax.jit(_decompositions)(*inputs)
        out = plax.tree_util.tree_map(np.asarray, out)
    return dtype, inputs, out


def test_cholesky_lu_and_triangular_solve(computed):
    dtype, (square, tall, wide, hpd, b), out = computed
    close(out["cholesky"], np.linalg.cholesky(hpd), dtype, 10)
    for name, a in (("lu_square", square), ("lu_tall", tall), ("lu_wide", wide)):
        packed, pivots, perm = out[name]
        m, n = a.shape[-2:]
        k = min(m, n)
        low = np.tril(packed[..., :, :k], -1) + np.eye(m, k)
        up = np.triu(packed[..., :k, :])
        close(low @ up, np.take_along_axis(a, perm[..., None], -2), dtype, 10)
        for i in np.ndindex(a.shape[:-2]):
            np.testing.assert_array_equal(pivots[i], sla.lu_factor(a[i])[1])
    close(out["trisolve_left"], np.linalg.solve(np.tril(square), b), dtype, 10)
    unit_upper = np.triu(square, 1) + np.eye(4)
    close(out["trisolve_right"], np.swapaxes(b, 1, 2) @ np.linalg.inv(H(unit_upper)), dtype, 10)
    close(out["trisolve_vector"], np.linalg.solve(np.triu(square), b[..., :1])[..., 0], dtype, 10)


def _check_unitary(q, dtype):
    close(H(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2),
          dtype, 10)


def test_qr(computed):
    dtype, (square, tall, wide, hpd, b), out = computed
    for name, a, shapes in (("qr_tall", tall, ((3, 5, 3), (3, 3, 3))),
                            ("qr_full", tall, ((3, 5, 5), (3, 5, 3))),
                            ("qr_wide", wide, ((3, 3), (3, 4)))):
        q, r = out[name]
        assert (q.shape, r.shape) == shapes
        _check_unitary(q, dtype)
        np.testing.assert_array_equal(r, np.triu(r))
        close(q @ r, a, dtype, 10)
    q, r, p = out["qr_pivoted"]
    close(q @ r, np.take_along_axis(tall, p[..., None, :], -1), dtype, 10)
    assert np.all(np.abs(np.diagonal(r, axis1=-2, axis2=-1))[..., :-1] + 1e-4
                  >= np.abs(np.diagonal(r, axis1=-2, axis2=-1))[..., 1:])


def test_eigh_and_tridiagonal(computed):
    dtype, (square, tall, wide, hpd, b), out = computed
    want = np.linalg.eigvalsh(hpd)
    for name in ("eigh", "eigh_upper"):
        v, w = out[name]
        assert w.dtype == np.finfo(dtype).dtype
        close(w, want, dtype, 50)
        close(hpd @ v, v * w[..., None, :], dtype, 100)
    v, w = out["eigh_subset"]
    assert v.shape == (2, 4, 2)
    close(w, want[..., 1:3], dtype, 50)
    _, d, e, _ = out["tridiagonal"]
    tri = np.stack([np.diag(d[i]) + np.diag(e[i], 1) + np.diag(e[i], -1) for i in range(2)])
    close(np.linalg.eigvalsh(tri), want, dtype, 50)


def test_svd(computed):
    dtype, (square, tall, wide, hpd, b), out = computed
    for name, a, full in (("svd_tall", tall, False), ("svd_full", tall, True),
                          ("svd_wide", wide, True), ("svd_qr", square, True)):
        u, s, vh = out[name]
        un, sn, vhn = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (un.shape, sn.shape, vhn.shape)
        close(s, sn, dtype, 10)
        _check_unitary(u, dtype)
        k = s.shape[-1]
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
    close(out["svd_values"], np.linalg.svd(square, compute_uv=False), dtype, 10)


def test_eig_schur_and_hessenberg(computed):
    dtype, (square, tall, wide, hpd, b), out = computed
    w, vl, vr = out["eig"]
    assert w.dtype == np.result_type(dtype, np.complex64)
    close(square @ vr, vr * w[..., None, :], dtype, 50)
    close(H(vl) @ square, w[..., :, None] * H(vl), dtype, 50)
    for i in range(2):
        close(np.sort_complex(w[i]), np.sort_complex(np.linalg.eigvals(square[i])), dtype, 50)
    t, z = out["schur"]
    close(z @ t @ H(z), square, dtype, 50)
    below = np.tril(t, -2 if np.dtype(dtype).kind == "f" else -1)
    np.testing.assert_allclose(below, 0, atol=TOL[np.dtype(dtype)])
    packed, taus = out["hessenberg"]
    assert taus.shape == (2, 3)
    for i in range(2):
        close(np.triu(packed[i], -1), sla.hessenberg(square[i]), dtype, 50)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=["float32", "complex128"])
def test_tridiagonal_solve_and_pivots(dtype):
    m = 5
    dl, d, du = (sample(dtype, (2, m), seed) for seed in (5, 6, 7))
    d = d + 4
    b = sample(dtype, (2, m, 3), 8)
    dense = np.stack([np.diag(d[i]) + np.diag(du[i, :-1], 1) + np.diag(dl[i, 1:], -1)
                      for i in range(2)])
    with plax.enable_x64(np.dtype(dtype) in X64):
        x = linalg.tridiagonal_solve(dl, d, du, b)
        perturbed = linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
    close(x, np.linalg.solve(dense, b), dtype, 10)
    close(perturbed, np.linalg.solve(dense, b), dtype, 10)
    pivots = np.array([[2, 2, 3], [0, 4, 4]], np.int32)
    want = []
    for row in pivots:
        perm = list(range(6))
        for i, j in enumerate(row):
            perm[i], perm[j] = perm[j], perm[i]
        want.append(perm)
    np.testing.assert_array_equal(linalg.lu_pivots_to_permutation(pivots, 6), want)


EMPTY = [(0, 0), (3, 0, 0), (2, 0, 3), (2, 3, 0)]


@pytest.mark.parametrize("shape", EMPTY, ids=str)
def test_empty_matrices(shape):
    x = np.zeros(shape, np.float32)
    m, n = shape[-2:]
    batch = shape[:-2]
    k = min(m, n)
    u, s, vh = linalg.svd(x)
    assert (u.shape, s.shape, vh.shape) == ((*batch, m, m), (*batch, k), (*batch, n, n))
    q, r = linalg.qr(x)
    assert (q.shape, r.shape) == ((*batch, m, m), (*batch, m, n))
    packed, pivots, perm = linalg.lu(x)
    assert (packed.shape, pivots.shape, perm.shape) == (shape, (*batch, k), (*batch, m))
    if m == n:
        assert linalg.cholesky(x).shape == shape
        v, w = linalg.eigh(x)
        assert (v.shape, w.shape) == (shape, (*batch, n))
        assert [o.shape for o in linalg.eig(x)] == [(*batch, n), shape, shape]
        assert linalg.triangular_solve(x, np.zeros((*batch, n, 2), np.float32),
                                       left_side=True).shape == (*batch, n, 2)


# --- failures become NaNs, as in JAX -------------------------------------------------------------

def test_failed_factorizations_are_nan_per_matrix():
    batch = np.stack([np.eye(2), -np.eye(2)]).astype(np.float32)
    out = np.asarray(linalg.cholesky(batch))
    np.testing.assert_array_equal(out[0], np.eye(2))
    assert np.isnan(out[1][np.tril_indices(2)]).all() and out[1][0, 1] == 0
    packed, pivots, perm = linalg.lu(np.zeros((2, 2), np.float32))  # singular is not failure
    np.testing.assert_array_equal(packed, 0)
    np.testing.assert_array_equal(pivots, [0, 1])


# --- lowering ------------------------------------------------------------------------------------

def test_cpu_lowering_calls_lapack_through_typed_ffi():
    x = np.eye(3, dtype=np.float32)
    text = plax.jit(linalg.cholesky).lower(x).as_text()
    assert "stablehlo.custom_call @lapack_spotrf_ffi" in text and "api_version = 4" in text
    assert "backend_config = {uplo = 76 : ui8}" in text
    assert "operand_layouts = [dense<[0, 1]>" in text  # column-major
    with plax.enable_x64(True):
        text = plax.jit(lambda a: linalg.svd(a)).lower(np.eye(3, dtype=np.complex128)).as_text()
    assert "@lapack_zgesdd_ffi" in text


def test_lowering_rules_are_keyed_by_platform():
    from plax.extend import rules_of
    assert {"lowering", "lowering:cpu"} <= set(rules_of(linalg.cholesky_p))
    assert {"lowering", "lowering:cpu"} <= set(rules_of(linalg.triangular_solve_p))
    assert "lowering:cpu" in rules_of(linalg.lu_p) and "lowering" not in rules_of(linalg.lu_p)
    assert "lowering" in rules_of(linalg.qr_p)  # composed of geqrf and householder_product


def _run_generic(fun, *args):
    """Lower for a platform without LAPACK (so the generic rules apply) and run that
    module on the CPU client."""
    from jaxlib import _jax, xla_client

    from plax_transforms.lowering import lower_jaxpr_to_module
    closed = plax.make_jaxpr(fun)(*args)
    module = lower_jaxpr_to_module(closed, name="generic", platform="interpreter")
    client = xla_client.make_cpu_client()
    devices = _jax.DeviceList((client.devices()[0],))
    executable = client.compile_and_load(module.as_text(), devices, xla_client.CompileOptions())
    sharding = _jax.GSPMDSharding(devices, xla_client.HloSharding.replicate())
    buffers = [_jax.batched_device_put(a, sharding, [np.asarray(x)], [devices[0]], True, False,
                                       enable_x64=False) for a, x in zip(closed.in_avals, args)]
    out = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return [np.asarray(o[0]) for o in out]


def test_generic_lowerings_of_cholesky_and_triangular_solve():
    hpd = hermitian_pd(np.float32, (2, 3, 3))
    b = sample(np.float32, (2, 3, 2))
    factor, x = _run_generic(lambda a, b: (linalg.cholesky(a), linalg.triangular_solve(
        a, b, left_side=True, lower=True, transpose_a=True)), hpd, b)
    close(factor, np.linalg.cholesky(hpd), np.float32, 10)
    close(x, np.linalg.solve(np.swapaxes(np.tril(hpd), -1, -2), b), np.float32, 10)


def test_triangular_solve_of_narrow_floats_uses_xlas_solve():
    a = np.tril(hermitian_pd(np.float32, (3, 3))).astype(np.float16)
    x = linalg.triangular_solve(a, np.ones((3, 2), np.float16), left_side=True, lower=True)
    assert x.dtype == np.float16
    np.testing.assert_allclose(np.asarray(x, np.float32),
                               np.linalg.solve(a.astype(np.float32), np.ones((3, 2))), rtol=1e-2)


def test_missing_platform_lowering_names_the_platform():
    from plax_transforms.lowering import lower_jaxpr_to_module
    closed = plax.make_jaxpr(linalg.lu)(np.eye(2, dtype=np.float32))
    with pytest.raises(NotImplementedError, match="no lowering rule for platform 'cuda'"):
        lower_jaxpr_to_module(closed, name="lu", platform="cuda")


# --- derivatives -------------------------------------------------------------------------------

def _grads(f, *args, order=2):
    with plax.enable_x64(True):
        check_grads(plax.jit(f), args, order)


def test_cholesky_and_triangular_solve_derivatives():
    _grads(linalg.cholesky, hermitian_pd(np.float64, (2, 3, 3)))
    a, b = np.tril(sample(np.float64, (3, 3))) + 3 * np.eye(3), sample(np.float64, (3, 2), 1)
    _grads(lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True), a, b)
    _grads(lambda a, b: linalg.triangular_solve(a, b.T, transpose_a=True, lower=True,
                                                unit_diagonal=True), a, b)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=str)
def test_lu_and_qr_derivatives(shape):
    x = sample(np.float64, shape, 2) + 2 * np.eye(*shape)
    order = 2 if shape[0] == shape[1] else 1
    _grads(lambda x: linalg.lu(x)[0], x, order=order)
    _grads(lambda x: linalg.qr(x, full_matrices=False), x, order=order)
    _grads(lambda x: linalg.qr(x, full_matrices=False, pivoting=True)[:2], x, order=1)


def test_eigh_and_svd_derivatives_of_gauge_invariant_functions():
    def spectral(x):  # V f(w) Vᴴ does not depend on the eigenvectors' phases
        v, w = linalg.eigh(x)
        return jnp.matmul(v * jnp.sin(w)[..., None, :], jnp.swapaxes(v, -1, -2)), w
    _grads(spectral, sample(np.float64, (2, 3, 3), 3))

    def polar(x):  # U f(s) Vᴴ likewise
        u, s, vh = linalg.svd(x, full_matrices=False)
        return jnp.matmul(u * jnp.cos(s)[..., None, :], vh), s
    for shape, order in [((3, 3), 2), ((4, 2), 1), ((2, 4), 1)]:
        _grads(polar, sample(np.float64, shape, 4), order=order)
    _grads(lambda x: linalg.svd(x, compute_uv=False), sample(np.float64, (3, 4), 5))


def test_complex_derivatives_through_real_parts():
    re, im = sample(np.float64, (3, 3), 6), sample(np.float64, (3, 3), 7)

    def chol(re, im):
        a = lax.complex(re, im)
        factor = linalg.cholesky(jnp.matmul(a, jnp.conj(jnp.swapaxes(a, -1, -2))) +
                                 3 * jnp.eye(3))
        return jnp.real(factor), jnp.imag(factor)

    def eigenvalues(re, im):
        return linalg.eigh(lax.complex(re, im))[1]
    _grads(chol, re, im, order=1)
    _grads(eigenvalues, re, im, order=1)


def test_eig_and_tridiagonal_solve_derivatives():
    x = sample(np.float64, (3, 3), 8)
    _grads(lambda x: jnp.real(linalg.eig(x, compute_left_eigenvectors=False,
                                         compute_right_eigenvectors=False)[0]), x)

    def right_vectors(x):
        w, v = linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
        return jnp.real(v), jnp.imag(v)
    _grads(right_vectors, x, order=1)
    dl, d, du, b = (sample(np.float64, s, i) for i, s in enumerate([(4,), (4,), (4,), (4, 2)]))
    _grads(linalg.tridiagonal_solve, dl, d + 4, du, b)


def test_eig_derivatives_of_empty_matrices_are_empty():
    # The eigenvector rule took an argmax over the (empty) rows.
    x = np.zeros((2, 0, 0), np.float32)
    _, tangents = plax.jvp(lambda a: linalg.eig(a, enable_eigvec_derivs=True), (x,), (x,))
    assert [t.shape for t in tangents] == [(2, 0), (2, 0, 0), (2, 0, 0)]


def test_eigenvector_derivatives_need_opting_in():
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        plax.jvp(lambda x: linalg.eig(x)[1], (np.eye(2, dtype=np.float32),),
                 (np.eye(2, dtype=np.float32),))


# --- batching ------------------------------------------------------------------------------------

def _loop(f, *args, in_axes):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*(a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)))
            for i in range(size)]
    return plax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


BATCHED = [
    ("cholesky", linalg.cholesky, (hermitian_pd(np.float32, (3, 3, 3)),), (0,)),
    ("lu", linalg.lu, (sample(np.float32, (3, 2, 3)),), (1,)),
    ("qr", lambda x: linalg.qr(x, full_matrices=False), (sample(np.float32, (4, 3, 2)),), (2,)),
    ("eigh", lambda x: linalg.eigh(x)[1], (hermitian_pd(np.float32, (3, 3, 3)),), (0,)),
    ("svd", lambda x: linalg.svd(x, compute_uv=False), (sample(np.float32, (3, 4, 2)),), (0,)),
    ("trisolve_shared_a", lambda a, b: linalg.triangular_solve(a, b, left_side=True, lower=True),
     (hermitian_pd(np.float32, (3, 3)), sample(np.float32, (3, 2, 4))), (None, 1)),
    ("trisolve_right_shared_a", lambda a, b: linalg.triangular_solve(a, b),
     (hermitian_pd(np.float32, (3, 3)), sample(np.float32, (2, 4, 3))), (None, 0)),
    ("trisolve_both", lambda a, b: linalg.triangular_solve(a, b, left_side=True),
     (hermitian_pd(np.float32, (2, 3, 3)), sample(np.float32, (3, 1, 2))), (0, 2)),
    ("tridiagonal_solve", linalg.tridiagonal_solve,
     (sample(np.float32, (4,)), sample(np.float32, (4,)) + 4, sample(np.float32, (4,)),
      sample(np.float32, (3, 4, 2))), (None, None, None, 0)),
    ("lu_pivots", lambda p: linalg.lu_pivots_to_permutation(p, 4),
     (np.array([[1, 2], [3, 3], [0, 1]], np.int32),), (0,)),
]


@pytest.mark.parametrize("name,f,args,in_axes", BATCHED, ids=[b[0] for b in BATCHED])
def test_vmap_matches_a_loop(name, f, args, in_axes):
    mapped = plax.vmap(f, in_axes=in_axes)(*args)
    looped = _loop(f, *args, in_axes=in_axes)
    for m, s in zip(plax.tree_util.tree_leaves(mapped), plax.tree_util.tree_leaves(looped)):
        np.testing.assert_allclose(np.asarray(m), s, rtol=1e-5, atol=1e-5)


# --- bad input -----------------------------------------------------------------------------------

def test_bad_operands_raise_jax_style_errors():
    with pytest.raises(ValueError, match=r"square matrices \[\.\.\., n, n\], got operand of "
                                         r"shape \(2, 3\)"):
        linalg.cholesky(np.ones((2, 3), np.float32), symmetrize_input=False)
    with pytest.raises(TypeError, match="rank at least 2"):
        linalg.svd(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="does not accept dtype int32"):
        linalg.lu(np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="does not accept dtype float16.*float32 or float64"):
        linalg.cholesky(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match=r"b of shape \[\.\.\., m, n\]"):
        linalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 2), np.float32),
                                left_side=True)
    with pytest.raises(ValueError, match="subset_by_index"):
        linalg.eigh(np.eye(3, dtype=np.float32), subset_by_index=(2, 5))
    with pytest.raises(ValueError, match="permutation_size 1 must be at least"):
        linalg.lu_pivots_to_permutation(np.zeros(2, np.int32), 1)
    with pytest.raises(TypeError, match="tridiagonal_solve requires b"):
        linalg.tridiagonal_solve(*(np.ones(3, np.float32),) * 3, np.ones((2, 1), np.float32))
