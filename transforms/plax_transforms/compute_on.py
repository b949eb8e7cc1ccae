"""`plax.experimental.compute_on`: run the operations of a region on another kind of
compute unit (the host of the device, a GPU stream), as JAX 0.10.2 does.

`with compute_on("device_host"):` tags the ops staged inside (in jit or eager code)
with `_xla_compute_type = "host"`, which XLA's host offloader honours on GPU and TPU
(on CPU the host is the device). The innermost block wins. `compute_on2(f, ...)`
instead stages `f` as one `compute_on` equation, lowered as a call to a private
function that the attributes mark, its results placed in `out_memory_spaces`.
"""
from __future__ import annotations

import contextlib
import json
from typing import Iterator

from plax.extend.core import current_frontend_attributes, frontend_attributes
from plax_transforms.frontend_tags import PLACEMENT_KEYS

__all__ = ["compute_on", "compute_on2"]

_XLA_COMPUTE_TYPES = {"device_host": "host", "device": "dense", "tpu_sparsecore": "sparseoffload"}


def _check_compute_type(compute_type) -> None:
    if not isinstance(compute_type, str):
        raise TypeError("`compute_on`'s compute_type argument must be a string.")
    if compute_type not in _XLA_COMPUTE_TYPES and not compute_type.startswith("gpu_stream:"):
        raise ValueError(
            f"Invalid compute type {compute_type}. Current supported values are "
            "`device_host`, `device`, `tpu_sparsecore`, and `gpu_stream:#`.")


def placement_attributes(compute_type: str) -> dict[str, str]:
    """The frontend attributes that send an op to `compute_type`."""
    if compute_type.startswith("gpu_stream:"):
        return {"_xla_stream_annotation": compute_type.split(":", 1)[1], "inlineable": "false"}
    return {"_xla_compute_type": _XLA_COMPUTE_TYPES[compute_type]}


@contextlib.contextmanager
def compute_on(compute_type: str) -> Iterator[None]:
    """Run the operations staged inside on `compute_type` (`device_host`, `device`,
    `tpu_sparsecore` or `gpu_stream:N`)."""
    _check_compute_type(compute_type)
    others = {k: v for k, v in current_frontend_attributes() if k not in PLACEMENT_KEYS}
    with frontend_attributes({**others, **placement_attributes(compute_type)}):
        yield
