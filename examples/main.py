"""plax's main job: a real jitted computation on the CPU backend, checked against NumPy.

It finds the dominant eigenpair of a symmetric matrix by power iteration, compiled
once with `plax.jit`, then places a batch of matrices on every CPU device and
evaluates a jitted Rayleigh quotient on each. Every figure printed is followed by
the value NumPy computes, so a person can check it at a glance.
"""
import time

import numpy as np

import plax
import plax.numpy as jnp


@plax.jit
def power_iteration(matrix, vector):
    """Twenty-five steps of power iteration; returns (eigenvalue, eigenvector)."""
    for _ in range(25):
        vector = matrix @ vector
        vector = vector / jnp.sqrt(jnp.sum(vector * vector))
    return vector @ (matrix @ vector), vector


@plax.jit
def rayleigh_quotient(matrix, vector):
    return (vector @ (matrix @ vector)) / (vector @ vector)


def symmetric_matrix_with_gap(rng, n: int) -> np.ndarray:
    """A symmetric matrix whose top eigenvalue (10) stands clear of the rest (≤ ~2)."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = np.concatenate([[10.0], rng.uniform(-2.0, 2.0, n - 1)])
    return ((q * eigenvalues) @ q.T).astype(np.float32)


def main() -> None:
    rng = np.random.default_rng(0)
    devices = plax.devices()
    print(f"plax {plax.__version__} on {plax.default_backend()}: {len(devices)} devices")

    matrix = symmetric_matrix_with_gap(rng, 48)
    start = rng.standard_normal(48).astype(np.float32)
    t0 = time.perf_counter()
    eigenvalue, eigenvector = power_iteration(matrix, start)
    eigenvalue = float(eigenvalue)
    compile_and_run = time.perf_counter() - t0
    t0 = time.perf_counter()
    power_iteration(matrix, start)[0].block_until_ready()
    cached = time.perf_counter() - t0

    reference = np.linalg.eigvalsh(matrix.astype(np.float64))[-1]
    alignment = abs(float(np.dot(np.asarray(eigenvector), np.linalg.eigh(matrix)[1][:, -1])))
    print(f"dominant eigenvalue: plax {eigenvalue:.5f}   numpy {reference:.5f}")
    print(f"|cos(angle)| between eigenvectors: {alignment:.6f} (1 is perfect)")
    print(f"first call (trace+compile+run): {compile_and_run * 1e3:.1f} ms, "
          f"cached call: {cached * 1e3:.2f} ms")

    print("Rayleigh quotient of the found eigenvector, one matrix per device:")
    for i, device in enumerate(devices):
        m = plax.device_put(symmetric_matrix_with_gap(np.random.default_rng(i + 1), 8), device)
        v = plax.device_put(np.ones(8, np.float32), device)
        quotient = rayleigh_quotient(m, v)
        expected = float(np.ones(8) @ np.asarray(m) @ np.ones(8) / 8)
        print(f"  {device}: plax {float(quotient):+.5f}   numpy {expected:+.5f}")
    if not np.isclose(eigenvalue, reference, rtol=1e-4):
        raise SystemExit("plax disagrees with numpy")


if __name__ == "__main__":
    main()
