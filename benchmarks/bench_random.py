"""plax.random against jax.random: drawing, splitting and shuffling.

Measured, for plax and (when it is installed) JAX, each in its own subprocess:
`normal(key, (1000, 1000))` under jit (a cached call), a chain of 1000 `split`s in
a Python loop (`key, sub = split(key)`, eager) and the same chain inside one jitted
`fori_loop`, and `permutation(key, 10**6)` called eagerly. Ratios plax / JAX are
printed (below 1: plax is faster); the samples themselves are compared too, since
plax draws JAX's bits.

    python3 benchmarks/bench_random.py [--quick]
"""
from __future__ import annotations

import comparison
from comparison import best_seconds

CHAIN = 1000
PERMUTED = 10 ** 6


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    random = __import__(f"{lib_name}.random", fromlist=["random"])
    import numpy as np

    key = random.key(0)
    draw = lib.jit(lambda k: random.normal(k, (1000, 1000)))
    samples = lib.block_until_ready(draw(key))
    results = {"normal_us": best_seconds(lambda: lib.block_until_ready(draw(key)),
                                         5 if quick else 20, 5) * 1e6}

    def chain():
        k = key
        for _ in range(CHAIN):
            k, _ = random.split(k)
        return lib.block_until_ready(k)

    last = chain()
    results["split_chain_ms"] = best_seconds(chain, 1, 3 if quick else 7) * 1e3

    looped = lib.jit(lambda k: lib.lax.fori_loop(0, CHAIN, lambda i, k: random.split(k)[0], k))
    lib.block_until_ready(looped(key))
    results["split_loop_us"] = best_seconds(lambda: lib.block_until_ready(looped(key)),
                                            5 if quick else 20, 5) * 1e6

    perm = lib.block_until_ready(random.permutation(key, PERMUTED))
    results["permutation_ms"] = best_seconds(
        lambda: lib.block_until_ready(random.permutation(key, PERMUTED)), 2 if quick else 5,
        3) * 1e3
    results["check_normal_sum"] = float(np.asarray(samples, np.float64).sum())
    results["check_chain_key"] = float(np.asarray(random.key_data(last)).astype(np.float64) @
                                       np.array([1.0, 2.0 ** -32]))
    results["check_perm_head"] = float(np.asarray(perm[:4]) @ np.array([1e9, 1e6, 1e3, 1.0]))
    return results


FIGURES = [("normal_us", "jit normal (1000, 1000) (us)"),
           ("split_chain_ms", f"chain of {CHAIN} split, eager (ms)"),
           ("split_loop_us", f"{CHAIN} splits in jit fori_loop (us)"),
           ("permutation_ms", "permutation of 10^6 (ms)")]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)
