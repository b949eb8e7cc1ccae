"""plax-transforms: eager dispatch, lowering to StableHLO, jit, autodiff and vmap.

Reading path:

1. `lowering.py` — a Jaxpr becomes a StableHLO module, one rule per primitive
   (`mlir_context.py` makes the MLIR context; `manual_regions.py` says where a
   shard_map's body sits in the mesh, and nests a fully manual region in a
   partially manual one);
2. `call_placement.py` — which devices a call runs on and the shardings its module
   states; `executing.py` — lowering once per abstract layout, compiling once per
   device assignment;
3. `dispatch.py` — a primitive applied eagerly: a one-equation Jaxpr, cached;
4. `jit_primitive.py` — `jit_p`, the staged form of a jit call, with all its rules
   (abstract eval, lowering, jvp, partial eval, transpose, batching, dce);
5. `jit.py` — `jit`: the tracing cache, the fast path, `eval_shape`; `stages.py`
   holds its ahead-of-time stages (`Traced` → `Lowered` → `Compiled`),
   `signature.py` what tells cached calls apart, `explain.py` why a cache missed,
   `fastpath.py` what the C++ fast path consults and why a call missed it;
6. `ad.py` — forward mode (JVPTrace, jvp of Jaxprs); `partial_eval.py` — the
   known/unknown split behind linearize and vjp; `transpose.py` — the backward
   pass; `autodiff_api.py` — `jvp`, `grad`, `vjp`, jacobians; `fwd_bwd.py` —
   `fwd_and_bwd`, the two passes jitted apart;
   `custom_derivatives.py` — `custom_jvp`/`custom_vjp` and their primitives;
   `remat.py`, `ad_checkpoint.py` — `checkpoint` and its policies;
7. `batching.py`, `vmap_api.py` — `vmap` and batching of Jaxprs;
8. `test_util.py` — `plax.test_util`, numerical checks of derivatives, and
   `conformance.py` — its `check_primitive`, a primitive's rules checked against
   each other;
9. calls out of plax: `host_callback.py` — Python called from compiled code through
   jaxlib's host-callback custom call, with the effects callbacks have;
   `debug_callback.py` (`debug.callback`), `debug_print.py` (`debug.print`),
   `debugger.py` (`debug.breakpoint`), `pure_callback.py`, `io_callback.py`
   (`experimental.io_callback`); `ffi.py` — `plax.ffi`, C++ kernels through XLA's
   FFI; `vmap_methods.py` — how `vmap` batches such opaque calls.
10. `plax.experimental` modules, programs built on the above: `checkify/` (an
    interpreter threading an error state through a Jaxpr), `ode.py` (`odeint` and
    its adjoint rule), `sparse/` (the BCOO array, `sparsify`, sparse gradients);
11. the rest of JAX's API for custom rules and stages: `custom_batching.py`
    (`custom_vmap`), `custom_gradient.py` (`custom_gradient`, `closure_convert`),
    `compile_time_eval.py`, `checkpoint_policies.py`; and mutable references:
    `refs.py` (`plax.ref` and its primitives), `ref_discharge.py` (a Jaxpr's
    references made explicit inputs and outputs, as `jit` does after tracing).
12. `export/` — `plax.export`: a jitted function lowered once and serialized in JAX's
    format, called back through the `export.call_exported` primitive, with symbolic
    (shape-polymorphic) dimensions.

The rules of the standard primitives, `cond`, `while` and `scan` included, live
with their definitions in plax-stdlib.
"""
