"""`plax.experimental.profiler`: profiles read back for profile-guided compilation."""
from __future__ import annotations

from jaxlib import _profiler


def get_profiled_instructions_proto(tensorboard_dir: str) -> bytes:
    """The serialized `ProfiledInstructionsProto` (per-instruction costs) of the profile
    in `tensorboard_dir` (`<log_dir>/plugin/profile/<run>/`, as `plax.profiler.trace`
    writes it). It holds costs only for GPU programs; a missing folder is the runtime's
    NOT_FOUND error."""
    return _profiler.get_profiled_instructions_proto(tensorboard_dir)


__all__ = ["get_profiled_instructions_proto"]
