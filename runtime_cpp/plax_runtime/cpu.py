"""The CPU backend: the PJRT CPU client built into jaxlib.

Its device count follows `jax_num_cpu_devices` when that is set (>= 0), else
`XLA_FLAGS=--xla_force_host_platform_device_count=N` (read by XLA itself). After
`plax.distributed.initialize` the client is one process's part of the run.
"""
from __future__ import annotations

from jaxlib import xla_client as xc

from plax.extend import config
from plax_runtime import distributed
from plax_runtime.backends import BackendPlugin


def make_cpu_client() -> xc.Client:
    num_devices = config.num_cpu_devices.value
    return xc.make_cpu_client(asynchronous=config.cpu_enable_async_dispatch.value,
                              num_devices=num_devices if num_devices >= 0 else None,
                              **distributed.cpu_client_options())


backend = BackendPlugin(platform="cpu", make_client=make_cpu_client, priority=0,
                        package="plax-runtime")
