"""The `pallas_call` primitive and all its rules.

Its operands are the call's inputs; its results the arrays of `blocks`' last
`len(blocks) - num_inputs` mappings. `kernel` is the traced kernel: a Jaxpr
taking one int32 program id per grid dimension, then a reference to each
input's block and to each result's block, and returning nothing.

* lowering: interpret mode (`run_grid`, lowered as a private function) on every
  platform; a compiled kernel is a platform's own rule, added by the package that owns
  the platform through a `plax.lowering` entry point (plax-tpu's Mosaic lowering).
  Without one, a compiled kernel on CPU is JAX's ValueError, elsewhere a clear error;
* batching: the vmapped axis becomes a new leading grid dimension; each batched
  operand (and every result) gets a squeezed block dimension whose index is that
  grid dimension's id, so the kernel is unchanged;
* jvp: a `pallas_call` of the kernel's jvp, each tangent blocked as its primal;
* reverse mode (partial evaluation): JAX's ValueError, as JAX has no rule either.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from plax.extend.ad import Zero, instantiate, is_differentiable_dtype, jvp_jaxpr, tangent_aval
from plax.extend.batching import bdim_at_front
from plax.extend.core import (
    BATCHING,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    ClosedJaxpr,
    Primitive,
    eval_jaxpr,
    stage_flat,
)
from plax_stdlib.lax.control_flow.common import cached_on_jaxpr
from plax_pallas.interpreter import _pure_kernel, run_grid
from plax_pallas.specs import INDEX_AVAL, BlockMapping, squeezed

pallas_call_p = Primitive("pallas.pallas_call", multiple_results=True)


@pallas_call_p.def_abstract_eval
def _abstract_eval(*avals, blocks, num_inputs, **_):
    return [b.array_aval for b in blocks[num_inputs:]]


def lower_interpreted(ctx, *operands, interpret, **params):
    """The call lowered as interpret mode runs it (`run_grid`, as a private function):
    what every platform does with `interpret=True`, and a platform's own rule falls back
    to."""
    del interpret
    params = {k: v for k, v in params.items() if k in _INTERPRET_PARAMS}
    closed = stage_flat(lambda *xs: run_grid(xs, **params), list(ctx.avals_in))
    return ctx.lower_subjaxpr(closed, *operands, name="pallas_call")


_INTERPRET_PARAMS = ("kernel", "grid", "blocks", "num_inputs", "num_scalar_prefetch",
                     "input_output_aliases", "debug", "name")


@pallas_call_p.def_lowering
def _lowering(ctx, *operands, interpret, **params):
    """Interpret mode on any platform; a compiled kernel needs a platform's own rule
    (`plax.lowering` entry points: the TPU one comes with plax-tpu)."""
    if interpret:
        return lower_interpreted(ctx, *operands, interpret=interpret, **params)
    if ctx.platform == "cpu":
        raise ValueError("Only interpret mode is supported on CPU backend.")
    raise NotImplementedError(
        f"pallas_call: no Pallas lowering for platform {ctx.platform!r} is installed "
        "(plax-tpu lowers kernels for 'tpu'; plax has none for GPUs); pass interpret=True "
        "to run the kernel in interpret mode")


# --- vmap: one more grid dimension ----------------------------------------------------

@cached_on_jaxpr
def _kernel_with_batch_id(kernel: ClosedJaxpr) -> ClosedJaxpr:
    """`kernel` taking the new leading program id first (and ignoring it)."""
    def flat(batch_id, *args):
        return eval_jaxpr(kernel.jaxpr, kernel.consts, *args)
    dbg = kernel.jaxpr.debug_info
    return stage_flat(flat, [INDEX_AVAL, *kernel.in_avals],
                      debug_info=dbg and dbg._replace(arg_names=None, result_paths=None))


@cached_on_jaxpr
def _index_map_with_batch_id(index_map: ClosedJaxpr, dim) -> ClosedJaxpr:
    """`index_map` taking the new leading program id first; with `dim` (not None), the
    block's index along the new dimension `dim` is that id."""
    def flat(batch_id, *ids_and_prefetch):
        out = eval_jaxpr(index_map.jaxpr, index_map.consts, *ids_and_prefetch)
        return out if dim is None else [*out[:dim], batch_id, *out[dim:]]
    return stage_flat(flat, [INDEX_AVAL, *index_map.in_avals])


def _batched_mapping(block: BlockMapping, dim, size: int) -> BlockMapping:
    index_map = _index_map_with_batch_id(block.index_map, dim)
    if dim is None:
        return dataclasses.replace(block, index_map=index_map)
    aval = block.array_aval
    shape = (*aval.shape[:dim], size, *aval.shape[dim:])
    dims = (*block.dims[:dim], squeezed, *block.dims[dim:])
    return dataclasses.replace(block, dims=dims, index_map=index_map,
                               array_aval=aval.update(shape=shape))


def _batching(axis_data, args, dims, *, kernel, grid, blocks, num_inputs,
              input_output_aliases, num_scalar_prefetch, **params):
    size = axis_data.size
    if any(d is not None for d in dims[:num_scalar_prefetch]):
        raise NotImplementedError("vmap of a pallas_call over its scalar-prefetch operands "
                                  "(plax batches the blocked operands only)")
    args, dims = list(args), list(dims)
    for i, _ in input_output_aliases:  # an aliased input becomes its (batched) result
        args[i], dims[i] = bdim_at_front(args[i], dims[i], size), 0
    # Scratch buffers stay one per call: the batch's grid dimension is outermost, so
    # each example runs all its steps before the next starts.
    new_blocks = tuple(
        [_batched_mapping(b, d, size) for b, d in zip(blocks[:num_inputs], dims)]
        + [_batched_mapping(b, None if b.scratch else 0, size) for b in blocks[num_inputs:]])
    outs = pallas_call_p.bind(
        *args, kernel=_kernel_with_batch_id(kernel), grid=(size, *grid), blocks=new_blocks,
        num_inputs=num_inputs, input_output_aliases=input_output_aliases,
        num_scalar_prefetch=num_scalar_prefetch, **params)
    return outs, [None if b.scratch else 0 for b in blocks[num_inputs:]]


pallas_call_p.define_rule(BATCHING, _batching)


# --- jvp: the kernel's jvp over primal and tangent blocks ------------------------------

def _differentiable(block: BlockMapping) -> bool:
    return is_differentiable_dtype(block.array_aval.dtype)


@cached_on_jaxpr
def _jvp_kernel(kernel: ClosedJaxpr, num_ids: int, num_inputs: int,
                with_tangent: tuple[bool, ...]) -> ClosedJaxpr:
    """A kernel over the ids and the references of the jvp's `pallas_call` (primal
    inputs, tangent inputs, primal results, tangent results; tangents for the blocks
    `with_tangent`): it runs the jvp of the discharged kernel on their values and
    writes the final primal and tangent values back."""
    pure, _ = _pure_kernel(kernel, num_ids)
    jvp, _ = jvp_jaxpr(pure, [False] * num_ids + list(with_tangent),
                       instantiate=list(with_tangent))
    avals = kernel.in_avals[num_ids:]
    n_tin = sum(with_tangent[:num_inputs])
    tangent_avals = [a for a, t in zip(avals, with_tangent) if t]
    new_avals = [*avals[:num_inputs], *tangent_avals[:n_tin], *avals[num_inputs:],
                 *tangent_avals[n_tin:]]

    def flat(*args):
        ids, refs = args[:num_ids], args[num_ids:]
        n_in = num_inputs + n_tin
        primal = [*refs[:num_inputs], *refs[n_in:n_in + len(avals) - num_inputs]]
        tangent = [*refs[num_inputs:n_in], *refs[n_in + len(avals) - num_inputs:]]
        outs = eval_jaxpr(jvp.jaxpr, jvp.consts, *ids, *(r[...] for r in primal + tangent))
        for r, v in zip(primal + tangent, outs):
            r[...] = v
        return []

    return stage_flat(flat, [*kernel.in_avals[:num_ids], *new_avals])


def _jvp(primals, tangents, *, kernel, grid, blocks, num_inputs, input_output_aliases,
         **params):
    ins, outs = blocks[:num_inputs], blocks[num_inputs:]
    _, writes = _pure_kernel(kernel, len(grid))
    aliased = dict(input_output_aliases)
    # An input has a tangent block if its tangent is not zero, or the kernel writes it
    # (a later step may read what it wrote), or it is aliased; every differentiable
    # result has one.
    in_tangent = tuple(_differentiable(b) and (not isinstance(t, Zero) or w or i in aliased)
                       for i, (b, t, w) in enumerate(zip(ins, tangents, writes)))
    out_tangent = tuple(_differentiable(b) for b in outs)
    call = dict(grid=grid, num_inputs=num_inputs, **params)
    if all(isinstance(t, Zero) for t in tangents):
        return pallas_call_p.bind(*primals, kernel=kernel, blocks=blocks,
                                  input_output_aliases=input_output_aliases, **call), \
            [Zero(tangent_aval(b.array_aval)) for b in outs]
    tangent_in = [instantiate(t) for t, w in zip(tangents, in_tangent) if w]
    in_pos, out_pos = np.cumsum(in_tangent) - 1, np.cumsum(out_tangent) - 1
    n_tin = len(tangent_in)
    tangent_aliases = tuple((num_inputs + int(in_pos[i]), len(outs) + int(out_pos[o]))
                            for i, o in input_output_aliases if in_tangent[i])
    new_blocks = (*ins, *(b for b, t in zip(ins, in_tangent) if t),
                  *outs, *(b for b, t in zip(outs, out_tangent) if t))
    call["num_inputs"] = num_inputs + n_tin
    results = pallas_call_p.bind(
        *primals, *tangent_in,
        kernel=_jvp_kernel(kernel, len(grid), num_inputs, (*in_tangent, *out_tangent)),
        blocks=new_blocks, input_output_aliases=tuple(input_output_aliases) + tangent_aliases,
        **call)
    primal_out, tangent_out = results[:len(outs)], iter(results[len(outs):])
    return primal_out, [next(tangent_out) if t else Zero(tangent_aval(b.array_aval))
                        for b, t in zip(outs, out_tangent)]


pallas_call_p.define_rule(JVP, _jvp)


# --- reverse mode: not supported, as in JAX ------------------------------------------------

def _no_reverse_mode(name=None, **_):
    what = f"pallas_call {name}" if name else "a pallas_call"
    raise ValueError(
        "Linearization failed to produce known values for all output primals. This is "
        "typically caused by attempting to differentiate a function uses an operation that "
        f"does not support reverse-mode autodiff: {what} (JAX has no reverse-mode rule for "
        "pallas_call; give the function a custom_vjp).")


pallas_call_p.define_rule(PARTIAL_EVAL, lambda trace, args, **params: _no_reverse_mode(**params))
pallas_call_p.define_rule(PARTIAL_EVAL_JAXPR, lambda eqn, unknowns: _no_reverse_mode(**eqn.params))

__all__ = ["pallas_call_p"]
