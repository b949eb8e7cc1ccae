"""plax on a TPU chip: values of the common operations against the same programs on
the CPU backend (plax's CPU results are themselves checked against NumPy and JAX
elsewhere) or against NumPy, at `default_matmul_precision("highest")`.

Skipped where no TPU is attached (CI); benchmarks/tpu/run_on_chip.sh runs this file
on a TPU machine, in one process (one program at a time may hold the chip).
"""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
import plax.scipy.linalg as scipy_linalg
from plax import lax

pytestmark = pytest.mark.skipif(plax.default_backend() != "tpu", reason="no TPU attached")

RNG = np.random.default_rng(0)
# TPU's float32 transcendental functions are approximations good to about 1e-4 relative
# (JAX's on the same chip are the same: both lower to the same StableHLO ops).
TRANSCENDENTAL_RTOL = 5e-4


def _close(tpu, expected, rtol=2e-5, atol=2e-5):
    np.testing.assert_allclose(np.asarray(tpu, np.float64), np.asarray(expected, np.float64),
                               rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def highest_precision():
    with plax.default_matmul_precision("highest"):
        yield


def on_cpu(fn, *args):
    """`fn` jitted on the CPU backend: the reference for its TPU run."""
    cpu = plax.devices("cpu")[0]
    return plax.jit(fn)(*[plax.device_put(a, cpu) for a in args])


def test_the_chip_is_the_default_device():
    device = plax.devices()[0]
    assert device.platform == "tpu" and "TPU" in device.device_kind
    x = plax.device_put(np.arange(4.0, dtype=np.float32))
    assert x.devices() == {device}


def test_matmul_and_mlp_gradients_match_the_cpu():
    w1, w2 = RNG.standard_normal((128, 256), np.float32), RNG.standard_normal((256, 8), np.float32)
    x = RNG.standard_normal((64, 128), np.float32)

    def loss(w1, w2, x):
        return jnp.mean(jnp.tanh(x @ w1) @ w2 ** 2)
    grad = plax.grad(loss, argnums=(0, 1))
    for got, want in zip(plax.jit(grad)(w1, w2, x), on_cpu(grad, w1, w2, x)):
        _close(got, want, rtol=TRANSCENDENTAL_RTOL, atol=5e-5)


@pytest.mark.parametrize("name", ["exp", "log1p", "tanh", "sin", "erf", "logistic", "rsqrt"])
def test_elementwise_against_numpy(name):
    x = RNG.uniform(0.1, 3.0, (8, 128)).astype(np.float32)
    fn = {"logistic": lax.logistic, "erf": lax.erf, "rsqrt": lax.rsqrt}.get(
        name, getattr(jnp, name, None))
    _close(plax.jit(fn)(x), on_cpu(fn, x), rtol=TRANSCENDENTAL_RTOL, atol=1e-6)


def test_reductions_sorting_and_scans():
    x = RNG.standard_normal((16, 512)).astype(np.float32)
    fn = lambda a: (a.sum(1), a.max(0), jnp.cumsum(a, 1), jnp.sort(a, 1),
                    lax.top_k(a, 5)[1], jnp.argmax(a, 1))
    for got, want in zip(plax.jit(fn)(x), on_cpu(fn, x)):
        _close(got, want, rtol=1e-5, atol=1e-4)


def test_control_flow():
    def fn(x):
        y = lax.fori_loop(0, 10, lambda i, c: c * 0.9 + i, x)
        z = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2), (0, y))[1]
        carry, ys = lax.scan(lambda c, v: (c + v, c * v), jnp.zeros(128), z)
        return lax.cond(carry.sum() > 0, jnp.sin, jnp.cos, ys)
    x = RNG.standard_normal((8, 128)).astype(np.float32)
    _close(plax.jit(fn)(x), on_cpu(fn, x), rtol=1e-4, atol=1e-4)


def test_random_bits_are_the_same_on_tpu_and_cpu():
    fn = lambda seed: (plax.random.bits(plax.random.key(seed), (1024,)),
                       plax.random.normal(plax.random.key(seed), (1024,)))
    got, want = plax.jit(fn)(7), on_cpu(fn, 7)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    _close(got[1], want[1], rtol=1e-5, atol=1e-5)


def test_linear_algebra():
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    spd = a @ a.T + 64 * np.eye(64, dtype=np.float32)
    chol = plax.jit(jnp.linalg.cholesky)(spd)
    _close(np.asarray(chol) @ np.asarray(chol).T, spd, rtol=1e-4, atol=1e-3)
    q, r = plax.jit(jnp.linalg.qr)(a)
    _close(np.asarray(q) @ np.asarray(r), a, rtol=1e-4, atol=1e-4)
    w, v = plax.jit(jnp.linalg.eigh)(spd)
    _close(w, np.linalg.eigvalsh(spd.astype(np.float64)), rtol=1e-4, atol=1e-3)
    b = RNG.standard_normal((64, 4)).astype(np.float32)
    _close(plax.jit(jnp.linalg.solve)(spd, b), np.linalg.solve(spd.astype(np.float64), b),
           rtol=1e-4, atol=1e-4)
    _close(plax.jit(jnp.linalg.inv)(spd) @ spd, np.eye(64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, full", [((48, 48), False), ((64, 24), False),
                                         ((24, 64), True), ((64, 24), True)])
def test_svd_by_qdwh(shape, full):
    """TPU's SVD (the polar decomposition by QDWH, then eigh of its Hermitian factor):
    singular values against NumPy's in float64, the factors by reconstruction and
    orthogonality; pinv and the polar decomposition built on it."""
    a = RNG.standard_normal(shape).astype(np.float32)
    u, s, vh = plax.jit(lambda m: jnp.linalg.svd(m, full_matrices=full))(a)
    u, s, vh = (np.asarray(t, np.float64) for t in (u, s, vh))
    expected = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    np.testing.assert_allclose(s, expected, rtol=1e-4, atol=1e-4 * expected[0])
    k = min(shape)
    np.testing.assert_allclose(u[:, :k] * s @ vh[:k], a, atol=1e-4 * expected[0])
    np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-4)
    np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=1e-4)
    _close(plax.jit(jnp.linalg.pinv)(a), np.linalg.pinv(a.astype(np.float64)), rtol=1e-3,
           atol=1e-3)
    if shape[0] >= shape[1]:  # (QDWH's polar factors a tall or square matrix from the right)
        unitary, posdef = plax.jit(scipy_linalg.polar)(a)
        _close(np.asarray(unitary, np.float64) @ np.asarray(posdef, np.float64), a,
               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [512, 1024])
def test_eigh_beyond_256(n):
    """XLA's TPU eigensolver past the size where JAX switches to divide and conquer:
    eigenvalues against NumPy's in float64, eigenvectors by residual and orthogonality,
    and a subset sliced from the sorted whole."""
    a = RNG.standard_normal((n, n)).astype(np.float32)
    sym = (a + a.T) / 2
    v, w = plax.jit(lax.linalg.eigh)(sym)
    v, w = np.asarray(v, np.float64), np.asarray(w, np.float64)
    scale = np.abs(np.linalg.eigvalsh(sym.astype(np.float64))).max()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym.astype(np.float64)),
                               atol=1e-4 * scale)
    assert np.abs(sym @ v - v * w).max() < 1e-3 * scale
    assert np.abs(v.T @ v - np.eye(n)).max() < 1e-3
    v8, w8 = plax.jit(lambda m: lax.linalg.eigh(m, subset_by_index=(n - 8, n)))(sym)
    assert v8.shape == (n, 8)
    np.testing.assert_allclose(np.asarray(w8, np.float64), w[-8:], atol=1e-4 * scale)


def test_fft_and_convolution():
    x = RNG.standard_normal((4, 256)).astype(np.float32)
    _close(plax.jit(jnp.fft.rfft)(x), np.fft.rfft(x), rtol=1e-4, atol=1e-3)
    img = RNG.standard_normal((2, 16, 16, 8)).astype(np.float32)
    kernel = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
    conv = lambda i, k: lax.conv_general_dilated(i, k, (1, 1), "SAME",
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _close(plax.jit(conv)(img, kernel), on_cpu(conv, img, kernel), rtol=1e-4, atol=1e-4)


def test_gather_scatter_and_bfloat16():
    table = RNG.standard_normal((256, 128)).astype(np.float32)
    idx = RNG.integers(0, 256, 32).astype(np.int32)
    fn = lambda t, i: (t[i], t.at[i].add(1.0), t.astype(jnp.bfloat16) @ t.T.astype(jnp.bfloat16))
    got, want = plax.jit(fn)(table, idx), on_cpu(fn, table, idx)
    _close(got[0], want[0])
    _close(got[1], want[1])
    assert got[2].dtype == jnp.bfloat16
    _close(got[2], want[2], rtol=2e-2, atol=1.0)


def test_donation_and_transfers():
    x = plax.device_put(np.ones((512, 128), np.float32))
    f = plax.jit(lambda a: a * 2, donate_argnums=0)
    y = f(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), 2.0)
    cpu = plax.device_put(y, plax.devices("cpu")[0])
    np.testing.assert_array_equal(np.asarray(cpu), 2.0)


def test_cached_calls_take_the_fast_path():
    f = plax.jit(lambda a: a + 1)
    x = plax.device_put(np.zeros((8, 128), np.float32))
    for _ in range(5):
        x = f(x)
    np.testing.assert_array_equal(np.asarray(x), 5.0)


def test_eager_ops_and_vmap_grad():
    x = plax.device_put(RNG.standard_normal((8, 128)).astype(np.float32))
    _close(jnp.sin(x) * 2 + 1, np.sin(np.asarray(x)) * 2 + 1, rtol=TRANSCENDENTAL_RTOL,
           atol=1e-5)
    per_row = plax.vmap(plax.grad(lambda r: jnp.sum(jnp.tanh(r) ** 2)))(x)
    _close(per_row, on_cpu(plax.vmap(plax.grad(lambda r: jnp.sum(jnp.tanh(r) ** 2))), x),
           rtol=TRANSCENDENTAL_RTOL, atol=2e-4)


def test_shard_map_and_pmap_on_one_chip():
    from plax.sharding import Mesh, PartitionSpec as P
    mesh = Mesh(np.array(plax.devices()[:1]), ("x",))
    f = plax.shard_map(lambda a: lax.psum(a, "x") * 2, mesh=mesh, in_specs=P("x"),
                       out_specs=P("x"))
    np.testing.assert_array_equal(np.asarray(f(np.ones((8, 128), np.float32))), 2.0)
    g = plax.pmap(lambda a: lax.psum(a, "i"), axis_name="i", devices=plax.devices()[:1])
    np.testing.assert_array_equal(np.asarray(g(np.ones((1, 128), np.float32))), 1.0)


def test_host_callbacks():
    seen = []
    f = plax.jit(lambda a: plax.pure_callback(lambda v: np.asarray(v) * 3,
                                              plax.ShapeDtypeStruct(a.shape, a.dtype), a) + 1)
    np.testing.assert_array_equal(np.asarray(f(np.ones(8, np.float32))), 4.0)
    g = plax.jit(lambda a: (plax.debug.callback(lambda v: seen.append(np.asarray(v)), a), a)[1])
    plax.block_until_ready(g(np.arange(3.0, dtype=np.float32)))
    plax.effects_barrier()
    assert len(seen) == 1 and seen[0].tolist() == [0.0, 1.0, 2.0]
