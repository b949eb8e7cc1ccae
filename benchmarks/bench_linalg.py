"""`jnp.linalg.solve`, `cholesky` and `svd` under `jit` on a batch of 256x256 float32
matrices, for plax and, when it is installed, JAX (both call jaxlib's LAPACK
kernels on CPU).

Each library runs in its own subprocess; the figures are the best per-call times
of cached calls, and the ratio plax / JAX is printed (goal: at most 1.1). The
`check_` figures compare the two libraries' results. LAPACK runs on one OpenBLAS
thread unless OPENBLAS_NUM_THREADS says otherwise: on a shared machine, spinning
BLAS threads make timings vary a hundredfold, which hides what is compared.

    python3 benchmarks/bench_linalg.py [--quick]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before jaxlib loads LAPACK

import comparison  # noqa: E402
from comparison import best_seconds  # noqa: E402

BATCH, N = 8, 256


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((BATCH, N, N), np.float32)
    spd = a @ np.swapaxes(a, -1, -2) + N * np.eye(N, dtype=np.float32)
    b = rng.standard_normal((BATCH, N, 4), np.float32)
    a, spd, b = lib.device_put((a, spd, b))
    solve = lib.jit(jnp.linalg.solve)
    cholesky = lib.jit(jnp.linalg.cholesky)
    svd = lib.jit(lambda x: jnp.linalg.svd(x, full_matrices=False))
    results = {
        "check_solve": float(np.abs(np.asarray(solve(a, b))).sum()),
        "check_cholesky": float(np.abs(np.asarray(cholesky(spd))).sum()),
        "check_svd": float(np.asarray(svd(a)[1]).sum()),
    }
    number, repeat = (3, 3) if quick else (10, 5)
    results["solve_ms"] = best_seconds(lambda: lib.block_until_ready(solve(a, b)),
                                       number, repeat) * 1e3
    results["cholesky_ms"] = best_seconds(lambda: lib.block_until_ready(cholesky(spd)),
                                          number, repeat) * 1e3
    results["svd_ms"] = best_seconds(lambda: lib.block_until_ready(svd(a)),
                                     max(1, number // 2), repeat) * 1e3
    return results


FIGURES = [("solve_ms", f"solve {BATCH}x{N}x{N}, 4 rhs (ms)"),
           ("cholesky_ms", f"cholesky {BATCH}x{N}x{N} (ms)"),
           ("svd_ms", f"svd {BATCH}x{N}x{N} (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)
