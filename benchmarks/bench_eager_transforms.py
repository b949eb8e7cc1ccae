"""Eager transformations of jitted `jnp` functions, plax against JAX: `grad`, `vmap`,
`jvp` and `jacfwd` of small functions called outside `jit`.

Every `jnp` function is a jit with `inline=True`: under an eager transformation each
call runs its transformed Jaxpr as one compiled call, so these figures are mostly
the per-call Python overhead of the transformation rules and of eager execution.
Measured: the first call (tracing, compiling) and the steady state, the median of 5
rounds of 20 calls. Each library runs in its own subprocess, rounds alternate,
medians and the min–max of the ratios are printed:

    python3 benchmarks/bench_eager_transforms.py [--quick] [--rounds 5] [--cpu-time]
"""
from __future__ import annotations

import time

import comparison


def _steady_seconds(fn, number: int, rounds: int) -> float:
    """Seconds per call of `fn`: the median of `rounds` rounds of `number` calls (after
    3 warm-up calls)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return comparison.median(times)


def measure(lib_name: str, quick: bool) -> dict[str, float]:
    lib = __import__(lib_name)
    jnp = __import__(f"{lib_name}.numpy", fromlist=["numpy"])
    W = jnp.ones((8, 8)) * 0.1
    x = jnp.ones((4, 8))

    def loss(W):
        h = jnp.tanh(jnp.dot(x, W))
        return jnp.sum(jnp.exp(-h) * jnp.sin(h))

    cases = {"grad": lambda: lib.grad(loss)(W),
             "vmap": lambda: lib.vmap(lambda r: jnp.sin(jnp.tanh(r)) + jnp.cos(r))(x),
             "jvp": lambda: lib.jvp(loss, (W,), (W,)),
             "jacfwd": lambda: lib.jacfwd(lambda v: jnp.tanh(v) * 2)(x[0])}
    results = {}
    for name, case in cases.items():
        if not comparison.wanted(f"{name}_first_ms", f"{name}_steady_us"):
            continue
        start = time.perf_counter()
        value = lib.block_until_ready(case())
        results[f"{name}_first_ms"] = (time.perf_counter() - start) * 1e3
        results[f"{name}_steady_us"] = _steady_seconds(
            lambda case=case: lib.block_until_ready(case()), 5 if quick else 20, 5) * 1e6
        results[f"check_{name}"] = float(sum(float(jnp.sum(leaf))
                                             for leaf in lib.tree_util.tree_leaves(value)))
    return results


FIGURES = [(f"{name}_{kind}", f"{name}: {label}") for name in ("grad", "vmap", "jvp", "jacfwd")
           for kind, label in (("first_ms", "first call (ms)"),
                               ("steady_us", "steady call (us)"))]


if __name__ == "__main__":
    comparison.run(measure, FIGURES, __file__, __doc__)
