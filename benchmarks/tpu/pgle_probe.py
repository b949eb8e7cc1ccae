"""Why a PGLE-recompiled program runs slower or faster on a TPU chip: the transformer
block's step (pgle_on_chip's) compiled by plax and by JAX without a profile and with
the profile plax reads from two profiled runs (and that profile scaled), timed
alternately in one process.

Prints the profile (how many instructions, their total, the largest), how many of its
names the compiled module has, whether each profile changed the compiled program, and
ms per step of every variant (medians of rounds).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_on_chip import transformer_block, transformer_problem  # noqa: E402
from comparison import best_seconds, median  # noqa: E402


def make_step(jax):
    jnp = jax.numpy

    def step(p, x):
        value, grads = jax.value_and_grad(
            lambda p: jnp.mean(transformer_block(jax, jnp, p, x, 8).astype(jnp.float32) ** 2))(p)
        return value, jax.tree_util.tree_map(lambda w, g: w - (1e-3 * g).astype(w.dtype),
                                             p, grads)
    return step


def plax_profile(plax, compiled, args, runs=2):
    from plax_runtime import pgle
    name = compiled.runtime_executable().hlo_modules()[0].name
    profiles = []
    for _ in range(runs):
        session = pgle._start_session()
        plax.block_until_ready(compiled(*args))
        xspace = session.stop()
        print(f"  jaxlib get_fdo_profile: {len(pgle._profiler.get_fdo_profile(xspace))} bytes")
        profiles.append(pgle.profile_of(xspace, name))
    return pgle._profiler.aggregate_profiled_instructions(profiles, 90), pgle


def program(text):
    """The compiled module's instructions, without their source metadata (the caller's
    line numbers differ between compiles)."""
    lines = [re.sub(r",? metadata=\{[^}]*\}", "", line) for line in text.splitlines()
             if re.match(r"\s*(ROOT )?%", line)]
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()


def describe(costs, text, label):
    names = set(re.findall(r"%?([\w.\-]+) = ", text))
    inside = sum(1 for n in costs if n in names)
    print(f"  {label}: {inside} of {len(costs)} profiled names are instructions of the module")


def main():
    import jax
    import plax
    print(plax.devices(), jax.devices())
    variants = {}
    texts = {}
    for lib in (plax, jax):
        small = {} if lib.devices()[0].platform == "tpu" else dict(batch=1, t=64, d=128)
        p, x = transformer_problem(lib.numpy, **small)
        args = (p, x)
        compiled = lib.jit(make_step(lib)).lower(*args).compile()
        variants[f"{lib.__name__} none"] = (lib, compiled, args)
        texts[lib.__name__] = compiled.as_text()
        if lib is plax:
            profile, pgle = plax_profile(plax, compiled, args)
            costs = pgle.decode_costs(profile)
            top = sorted(costs.items(), key=lambda kv: -kv[1])[:8]
            print(f"profile: {len(costs)} instructions, {sum(costs.values()) / 1e3:.3f} ms "
                  f"in all; largest: " + ", ".join(f"{n} {c:.1f}us" for n, c in top))
            scaled = {k: pgle.encode_costs({n: c * k for n, c in costs.items()})
                      for k in (1e-3, 1e3)}
        describe(costs, texts[lib.__name__], lib.__name__)
        for label, prof in (("profile", profile), ("profile/1000", scaled[1e-3]),
                            ("profile*1000", scaled[1e3])):
            try:
                c = lib.jit(make_step(lib)).lower(*args).compile({"fdo_profile": prof})
            except Exception as err:  # noqa: BLE001 - a probe reports and goes on
                print(f"  {lib.__name__} {label}: {type(err).__name__}: {err}"[:400])
                continue
            changed = program(c.as_text()) != program(texts[lib.__name__])
            print(f"  {lib.__name__} {label}: compiled program "
                  f"{'differs' if changed else 'unchanged'}")
            variants[f"{lib.__name__} {label}"] = (lib, c, args)
    seconds = {k: [] for k in variants}
    for (lib, c, args) in variants.values():
        lib.block_until_ready(c(*args))
    for _ in range(5):
        for k, (lib, c, args) in variants.items():
            seconds[k].append(best_seconds(
                lambda lib=lib, c=c, args=args: lib.block_until_ready(c(*args)), 10, 1))
    print(f"{'variant':28}{'ms/step':>10}{'min':>8}{'max':>8}")
    for k, s in seconds.items():
        print(f"{k:28}{1e3 * median(s):>10.3f}{1e3 * min(s):>8.3f}{1e3 * max(s):>8.3f}")


if __name__ == "__main__":
    main()
