"""pallas_call's lowering for TPU (the `plax.lowering` entry point): a compiled kernel
becomes a Mosaic `tpu_custom_call` (`mosaic/`); interpret mode is Pallas's own.

Kept small: the Mosaic lowering (and jaxlib's Mosaic bindings) are imported on the
first kernel lowered for TPU, not when plax loads its lowering rules.
"""
from __future__ import annotations

from plax_pallas.primitive import lower_interpreted, pallas_call_p


def _lowering(ctx, *operands, interpret, **params):
    if interpret:
        return lower_interpreted(ctx, *operands, interpret=interpret, **params)
    from plax_tpu.mosaic.custom_call import lower_pallas_call
    return lower_pallas_call(ctx, *operands, **params)


pallas_call_p.def_lowering(_lowering, platform="tpu")
