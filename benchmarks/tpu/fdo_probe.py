"""What a TPU trace holds for PGLE, plax and JAX on the same chip: for a small
transformer step profiled under several `tpu_trace_mode`s, the size of jaxlib's
`get_fdo_profile` (0 bytes for both libraries with libtpu 0.0.42), the number of
events on the device plane, its lines, and a few events of each line (the "XLA Ops"
line is what plax's PGLE reads instead: `plax_runtime.pgle`).

    python3 benchmarks/tpu/fdo_probe.py plax   (and: jax)
"""
from __future__ import annotations

import importlib
import os
import sys

from jaxlib import _profile_data, _profiler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_on_chip import transformer_block, transformer_problem  # noqa: E402

MODES = (None, "TRACE_COMPUTE", "TRACE_COMPUTE_AND_SYNC", "TRACE_ONLY_XLA")


def probe(lib_name: str) -> None:
    jax = importlib.import_module(lib_name)
    jnp = jax.numpy
    p, x = transformer_problem(jnp, batch=2, t=256, d=256)
    step = jax.jit(lambda p, x: jax.value_and_grad(
        lambda p: jnp.mean(transformer_block(jax, jnp, p, x, 8).astype(jnp.float32) ** 2))(p))
    jax.block_until_ready(step(p, x))
    for mode in MODES:
        options = _profiler.ProfileOptions()
        options.enable_hlo_proto = True
        options.raise_error_on_start_failure = True
        if mode is not None:
            options.advanced_configuration = {"tpu_trace_mode": mode}
        session = _profiler.ProfilerSession(options)
        jax.block_until_ready(step(p, x))
        xspace = session.stop()
        planes = _profile_data.ProfileData.from_serialized_xspace(xspace).planes
        device = [plane for plane in planes if plane.name.startswith("/device:TPU")]
        print(f"{lib_name} {mode or 'default'}: get_fdo_profile "
              f"{len(_profiler.get_fdo_profile(xspace))} bytes, device events "
              f"{[sum(1 for line in plane.lines for _ in line.events) for plane in device]}")
        if device and mode is None:
            for line in device[0].lines:
                for event in list(line.events)[:2]:
                    print(f"    {line.name} | {event.name[:90]} {dict(event.stats)}")


if __name__ == "__main__":
    probe(sys.argv[1] if len(sys.argv) > 1 else "plax")
