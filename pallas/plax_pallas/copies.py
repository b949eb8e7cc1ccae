"""`pltpu.sync_copy`: copies between references that return when done, for kernels
and for the pipelines written in the kernel language (`emit_pipeline`)."""
from __future__ import annotations

from plax.extend import tree_util
from plax_pallas.kernel_primitives import make_async_copy
from plax_pallas.memory import run_scoped
from plax_pallas.tpu_spaces import SemaphoreType


def sync_copy(src_ref, dst_ref, *, add: bool = False) -> None:
    """Copies each reference of the pytree `src_ref` (or `ref.at[...]` view) into the
    one at the same place in `dst_ref`, and returns when every copy is done: one
    asynchronous copy each, on a DMA semaphore of their own, all started before the
    first wait.

    Raises:
        ValueError: the two pytrees differ in structure (`tree_map`'s error, as in
            JAX), or a pair in block shape.
        NotImplementedError: `add=True` (adding into the destination).
    """
    if add:
        raise NotImplementedError("sync_copy(add=True): plax's copies overwrite their "
                                  "destination; add the values in the kernel instead")
    if not tree_util.tree_leaves(src_ref):
        return

    def copy_all(sem) -> None:
        copies = tree_util.tree_leaves(tree_util.tree_map(
            lambda src, dst: make_async_copy(src, dst, sem), src_ref, dst_ref))
        for c in copies:
            c.start()
        for c in copies:
            c.wait()
    run_scoped(copy_all, SemaphoreType.DMA(()))
