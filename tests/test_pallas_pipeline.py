"""`pltpu.emit_pipeline` in interpret mode, against NumPy: which blocks each step sees,
outputs kept over consecutive steps that share a block and rewritten when a block
comes back, blocks of a traced size (`pl.BoundedSlice`), the pipeline's own program
ids; and the errors of bad pipelines and of `pl.run_scoped`.
(JAX's emit_pipeline reads the TPU's generation from the default device, so it
cannot run on CPU, even in interpret mode; tests/test_pallas_tpu_aot.py compares the
compiled pipelines with JAX's.)"""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental import pallas as pl
from plax.experimental.pallas import tpu as pltpu

ANY = pl.BlockSpec(memory_space=pl.ANY)


def _run(kernel, out_shape, *args, **params):
    shapes = out_shape if isinstance(out_shape, tuple) else (out_shape,)
    out_specs = tuple(ANY for _ in shapes) if isinstance(out_shape, tuple) else ANY
    return pl.pallas_call(kernel, out_shape=out_shape, in_specs=[ANY] * len(args),
                          out_specs=out_specs, interpret=True, **params)(*args)


def _f32(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def test_blocks_program_ids_scratches_and_pytrees():
    """Step (i, j) sees block (i, j) of `x`, a constant block of `w` and the pipeline's
    own program ids; arguments and specs are pytrees; scratches come last."""
    x, w = _f32(16, 256), _f32(8, 128)

    def kernel(x_hbm, w_hbm, o_hbm):
        def body(refs, o_ref, count_ref):
            count_ref[0] = pl.program_id(0) * pl.num_programs(1) + pl.program_id(1)
            o_ref[...] = refs["x"][...] * refs["w"][...] + count_ref[0].astype(jnp.float32)

        block = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        pl.run_scoped(
            lambda count_ref: pltpu.emit_pipeline(
                body, grid=(2, 2), in_specs=[{"x": block, "w": pl.BlockSpec((8, 128))}],
                out_specs=block)({"x": x_hbm, "w": w_hbm}, o_hbm, scratches=(count_ref,)),
            pltpu.SMEM((1,), jnp.int32))

    out = _run(kernel, plax.ShapeDtypeStruct(x.shape, jnp.float32), x, w)
    step = np.repeat(np.repeat(np.arange(4).reshape(2, 2), 8, 0), 128, 1)
    np.testing.assert_allclose(np.asarray(out), x * np.tile(w, (2, 2)) + step, rtol=1e-6)


def test_output_blocks_come_back():
    """Blocks A, A, B, A: the first A is accumulated over two steps and written back;
    when A comes back it starts anew (an output block is never read from HBM)."""
    x = _f32(4, 8, 128)

    def kernel(x_hbm, o_hbm):
        def body(x_ref, o_ref):
            i = pl.program_id(0)

            @pl.when((i == 0) | (i == 2) | (i == 3))
            def _():
                o_ref[...] = jnp.zeros_like(o_ref)

            o_ref[...] += x_ref[...]

        pltpu.emit_pipeline(
            body, grid=(4,), in_specs=pl.BlockSpec((None, 8, 128), lambda i: (i, 0, 0)),
            out_specs=pl.BlockSpec((None, 8, 128), lambda i: (jnp.where(i == 2, 1, 0), 0, 0)),
        )(x_hbm, o_hbm)

    out = np.asarray(_run(kernel, plax.ShapeDtypeStruct((2, 8, 128), jnp.float32), x))
    np.testing.assert_allclose(out, np.stack([x[3], x[2]]), rtol=1e-6)


def test_element_offsets_and_body_prologue():
    x = _f32(20, 128)

    def kernel(x_hbm, o_hbm):
        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...]

        pltpu.emit_pipeline(
            body, grid=(3,), in_specs=[pl.BlockSpec((pl.Element(8), 128), lambda i: (6 * i, 0))],
            out_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
        )(x_hbm, o_hbm, body_prologue=lambda: None)

    out = np.asarray(_run(kernel, plax.ShapeDtypeStruct((24, 128), jnp.float32), x))
    np.testing.assert_array_equal(out, np.concatenate([x[0:8], x[6:14], x[12:20]]))


def test_bounded_blocks_copy_their_traced_sizes():
    """Row ranges of traced sizes (`pl.BoundedSlice`), read from SMEM by the index map,
    are copied into and out of the start of 8-row buffers; rows outside them keep the
    output's previous contents (here: the aliased input's)."""
    x, base = _f32(16, 128), _f32(16, 128)
    bounds = np.array([[1, 4], [4, 4], [6, 14]], np.int32)

    def kernel(x_hbm, bounds_hbm, base_hbm, o_hbm, bounds_smem):
        del base_hbm  # aliased to o_hbm
        pltpu.sync_copy(bounds_hbm, bounds_smem)

        def body(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2

        def rows(i):
            return (pl.ds(bounds_smem[i, 0], bounds_smem[i, 1] - bounds_smem[i, 0]), 0)
        spec = pl.BlockSpec((pl.BoundedSlice(8), 128), rows)
        pltpu.emit_pipeline(body, grid=(3,), in_specs=[spec], out_specs=[spec])(x_hbm, o_hbm)

    out = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct(x.shape, jnp.float32),
                         in_specs=[ANY] * 3, out_specs=ANY, input_output_aliases={2: 0},
                         scratch_shapes=[pltpu.SMEM(bounds.shape, jnp.int32)],
                         interpret=True)(x, bounds, base)
    expected = base.copy()
    for start, stop in bounds:
        expected[start:stop] = x[start:stop] * 2
    np.testing.assert_array_equal(np.asarray(out), expected)


def _pipeline_call(grid=(2,), in_specs=None, **params):
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))

    def kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(lambda x_ref, o_ref: None, grid=grid,
                            in_specs=[spec] if in_specs is None else in_specs,
                            out_specs=[spec], **params)(x_hbm, o_hbm)
    return lambda: _run(kernel, plax.ShapeDtypeStruct((16, 128), jnp.float32), _f32(16, 128))


def _bad_bounded_map():
    spec = pl.BlockSpec((pl.BoundedSlice(8), 128), lambda i: (i, 0))
    return _pipeline_call(in_specs=[spec])()


@pytest.mark.parametrize("case, call, error, message", [
    ("grid", _pipeline_call(grid=(0,)), ValueError, "strictly positive"),
    ("spec_count", _pipeline_call(in_specs=[]), ValueError, "block specs"),
    ("partial_block", _pipeline_call(in_specs=[pl.BlockSpec((6, 128), lambda i: (i, 0))]),
     NotImplementedError, "does not divide"),
    ("bounded_map", _bad_bounded_map, ValueError, "exactly for the pl.BoundedSlice"),
    ("no_pipelining", _pipeline_call(no_pipelining=True), NotImplementedError,
     "no_pipelining"),
    ("no_buffers", _pipeline_call(in_specs=[pl.BlockSpec(
        (8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(0))]), ValueError,
     "buffer_count must be at least 1"),
    ("three_buffers", _pipeline_call(in_specs=[pl.BlockSpec(
        (8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))]), NotImplementedError,
     "at most two buffers"),
    ("lookahead", _pipeline_call(in_specs=[pl.BlockSpec(
        (8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(2, use_lookahead=True))]),
     NotImplementedError, "use_lookahead"),
    ("bounded_in_pallas_call", lambda: pl.pallas_call(
        lambda x_ref, o_ref: None, out_shape=plax.ShapeDtypeStruct((8,), jnp.float32),
        in_specs=[pl.BlockSpec((pl.BoundedSlice(8),), lambda: (pl.ds(0, 8),))],
        interpret=True)(np.zeros(8, np.float32)), NotImplementedError, "emit_pipeline"),
    ("scoped_ref_returned", lambda: pl.pallas_call(
        lambda o_ref: pl.run_scoped(lambda r: r, pltpu.VMEM((8,), jnp.float32)),
        out_shape=plax.ShapeDtypeStruct((8,), jnp.float32), interpret=True)(),
     ValueError, "returns a reference"),
])
def test_bad_pipelines(case, call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_core_axis_needs_a_parallel_dimension():
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))

    def kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(lambda x_ref, o_ref: None, grid=(2,), in_specs=[spec],
                            out_specs=[spec], core_axis=0,
                            dimension_semantics=(pltpu.ARBITRARY,))(x_hbm, o_hbm)
    call = pl.pallas_call(kernel, grid=(2,), out_shape=plax.ShapeDtypeStruct((16, 128),
                                                                             jnp.float32),
                          in_specs=[ANY], out_specs=ANY, interpret=True)
    with pytest.raises(NotImplementedError, match="without parallel grid dimensions"):
        call(_f32(16, 128))
