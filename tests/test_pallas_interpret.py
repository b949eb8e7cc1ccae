"""plax.experimental.pallas: kernels in interpret mode, checked against NumPy and (in
one JAX subprocess for the file) against JAX 0.10.2's interpret mode on the same
kernels; JAX's exception classes for bad input."""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.experimental import pallas as pl
from plax.experimental.pallas import tpu as pltpu, triton as plgpu
from tests.jax_reference import requires_jax, run_reference

# Each case runs unchanged with `jax`, `jnp`, `lax`, `pl`, `plgpu`, `pltpu` from JAX or plax.
CASES = '''
import numpy as np

def f32(*shape):
    return jnp.asarray(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 7 - 3)

def case_add_1d():
    def add(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]
    spec = pl.BlockSpec((4,), lambda i: (i,))
    return pl.pallas_call(add, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), grid=(2,),
                          in_specs=[spec, spec], out_specs=spec, interpret=True)(
        f32(8), 10 * f32(8))

def case_add_2d():
    def add(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * y_ref[...] + pl.program_id(1)
    spec = pl.BlockSpec((2, 2), lambda i, j: (i, j))
    return jax.jit(pl.pallas_call(add, out_shape=jax.ShapeDtypeStruct((4, 6), jnp.float32),
                                  grid=(2, 3), in_specs=[spec, spec], out_specs=spec,
                                  interpret=True))(f32(4, 6), f32(4, 6) + 1)

def blocked_matmul(x, y, bm, bn, bk):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += jnp.dot(x_ref[...], y_ref[...])
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(pl.cdiv(m, bm), pl.cdiv(n, bn), pl.cdiv(k, bk)),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)), interpret=True)(x, y)

def case_matmul():
    return blocked_matmul(f32(8, 6), f32(6, 4), 4, 2, 3)

def case_masked():
    n, block = 10, 4
    def kernel(x_ref, o_ref, raw_ref):
        offsets = pl.program_id(0) * block + jnp.arange(block)
        mask = offsets < n
        x = plgpu.load(x_ref, mask=mask, other=0.0)
        plgpu.store(o_ref, jnp.exp(x) * 2, mask=mask)
        raw_ref[...] = x_ref[...]
    spec = pl.BlockSpec((block,), lambda i: (i,))
    out, raw = pl.pallas_call(kernel, grid=(pl.cdiv(n, block),), in_specs=[spec],
                          out_specs=[spec, pl.BlockSpec((None, block), lambda i: (i, 0))],
                          out_shape=[jax.ShapeDtypeStruct((n,), jnp.float32),
                                     jax.ShapeDtypeStruct((3, block), jnp.float32)],
                          interpret=True)(f32(n))
    return jnp.concatenate([out, raw.reshape(-1)])

def case_fori_program_id():
    def kernel(x_ref, o_ref):
        def body(i, acc):
            return acc + x_ref[pl.ds(i * 2, 2)] * i
        acc = lax.fori_loop(0, 4, body, jnp.zeros((2,), jnp.float32))
        o_ref[...] = acc * pl.num_programs(0) + pl.program_id(0)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((6,), jnp.float32),
                          grid=(3,), in_specs=[pl.BlockSpec((8,), lambda i: (0,))],
                          out_specs=pl.BlockSpec((2,), lambda i: (i,)), interpret=True)(f32(8))

def _running_sum():
    def kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += x_ref[...]
        o_ref[...] = acc_ref[...] * 2
    spec = pl.BlockSpec((4,), lambda i: (i,))
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), grid=(2,), in_specs=[spec],
        out_specs=spec, scratch_shapes=[pltpu.VMEM((4,), jnp.float32)], interpret=True,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)))

def case_scratch():
    return jnp.concatenate([_running_sum()(f32(8)), jax.vmap(_running_sum())(f32(2, 8)).ravel()])

def case_run_scoped():
    def kernel(x_ref, o_ref):
        def body(tmp_ref):
            tmp_ref[...] = x_ref[...] + 1
            o_ref[...] = tmp_ref[...] * 2
        pl.run_scoped(body, pltpu.SMEM((8,), jnp.float32))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          interpret=True)(f32(8))

def case_run_scoped_result():
    # buffers by position and by name; the function's result leaves the region
    def kernel(x_ref, o_ref):
        def body(tmp_ref, count_ref):
            tmp_ref[...] = x_ref[...] * 2
            count_ref[0] = 3
            return tmp_ref[...] + count_ref[0].astype(jnp.float32)
        o_ref[...] = pl.run_scoped(body, pltpu.VMEM((8,), jnp.float32),
                                   count_ref=pltpu.SMEM((1,), jnp.int32))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          interpret=True)(f32(8))

def case_sync_copy():
    # pipelining.md's first kernel, and a pytree of copies (one of them from a view)
    def kernel(x_hbm_ref, y_hbm_ref, o_ref, scratch_ref, row_ref, whole_ref):
        pltpu.sync_copy({"row": x_hbm_ref.at[0:1], "whole": y_hbm_ref},
                        {"row": row_ref, "whole": whole_ref})
        pltpu.sync_copy(x_hbm_ref.at[1:2], scratch_ref)
        o_ref[...] = row_ref[...] + scratch_ref[...] * whole_ref[...]
    return pl.pallas_call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2,
                          out_shape=jax.ShapeDtypeStruct((1, 128), jnp.float32),
                          scratch_shapes=[pltpu.VMEM((1, 128), jnp.float32)] * 3,
                          interpret=True)(f32(8, 128), f32(1, 128) + 1)

def case_views():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)
        row = o_ref.at[1]
        row[...] = x_ref[0, :] * 2
        o_ref.at[pl.ds(2, 2)].at[0][1:3] = jnp.full((2,), 7.0, jnp.float32)
        mask = jnp.arange(4)[None] < 3
        plgpu.store(o_ref.at[pl.ds(3, 1), :],
                    plgpu.load(x_ref.at[pl.ds(1, 1), :], mask=jnp.arange(4)[None] < 2,
                               other=-1.0), mask=mask)
        o_ref.at[0][...] = o_ref.at[0][...] + x_ref.at[pl.ds(0, 2)][...][1]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4, 4), jnp.float32),
                          interpret=True)(f32(2, 4))

def case_loop():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)
        @pl.loop(0, 8, step=2)
        def _(i):
            o_ref[pl.ds(i, 2)] = x_ref[pl.ds(i, 2)] * i
        o_ref[0] = pl.loop(0, 3, init_carry=jnp.float32(0))(lambda i, c: c + i)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          interpret=True)(f32(8))

def _add_to_aliased():
    def kernel(x_ref, y_ref, o_ref):
        o_ref[pl.ds(0, 2)] += x_ref[pl.ds(0, 2)]
    spec = pl.BlockSpec((4,), lambda i: (i,))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          grid=(2,), in_specs=[spec, spec], out_specs=spec,
                          input_output_aliases={1: 0}, interpret=True)

def case_aliases():
    return _add_to_aliased()(f32(8), 100 + f32(8))

def case_vmap_aliases():
    f = _add_to_aliased()
    return jnp.stack([jax.vmap(f, in_axes=(0, None))(f32(2, 8), 100 + f32(8)),
                      jax.vmap(f, in_axes=(None, 0))(f32(8), 100 + f32(2, 8))])

def case_squeezed():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * (pl.program_id(0) + 1)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((3, 4), jnp.float32),
                          grid=(3,), in_specs=[pl.BlockSpec((pl.Squeezed(), 4), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((None, 4), lambda i: (i, 0)),
                          interpret=True)(f32(3, 4))

def _scaled_rows():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + pl.program_id(0)
    spec = pl.BlockSpec((4,), lambda i: (i,))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          grid=(2,), in_specs=[spec], out_specs=spec, interpret=True)

def case_vmap():
    return jax.vmap(_scaled_rows())(f32(3, 8))

def case_vmap_axis1():
    return jax.vmap(_scaled_rows(), in_axes=1)(f32(8, 3))

def case_vmap_matmul():
    f = lambda x: blocked_matmul(x, f32(6, 4), 4, 2, 3)
    return jax.vmap(f)(f32(2, 8, 6))

def case_jvp():
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.sin(x_ref[...]) * y_ref[...]
    spec = pl.BlockSpec((4,), lambda i: (i,))
    f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), grid=(2,),
                       in_specs=[spec, spec], out_specs=spec, interpret=True)
    y = f32(8) + 0.5
    out, t = jax.jvp(f, (f32(8), y), (jnp.ones(8, jnp.float32), y))
    return jnp.stack([out, t])

def case_atomic():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)
        old = plgpu.atomic_add(o_ref, (pl.ds(0, 4),), x_ref[...])
        o_ref[pl.ds(4, 4)] = old + 1
        plgpu.atomic_max(o_ref, (pl.ds(0, 4),), jnp.full((4,), 1.5, jnp.float32))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
                          in_specs=[pl.BlockSpec((4,), lambda: (0,))], interpret=True)(f32(8))
'''

BAD_CASES = '''
S8 = jax.ShapeDtypeStruct((8,), jnp.float32)
X8 = jnp.arange(8.0, dtype=jnp.float32)
SPEC = pl.BlockSpec((4,), lambda i: (i,))

def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]

def _call(kernel=_copy, in_specs=(SPEC,), out_specs=SPEC, args=(X8,), **kw):
    return pl.pallas_call(kernel, out_shape=kw.pop("out_shape", S8), grid=kw.pop("grid", (2,)),
                          in_specs=in_specs, out_specs=out_specs,
                          interpret=kw.pop("interpret", True), **kw)(*args)

BAD = {
    "block_rank": lambda: _call(in_specs=[pl.BlockSpec((4, 1), lambda i: (i, 0))]),
    "index_map_count": lambda: _call(in_specs=[pl.BlockSpec((4,), lambda i: (i, 0))]),
    "index_map_float": lambda: _call(in_specs=[pl.BlockSpec((4,), lambda i: (i * 1.0,))]),
    "index_map_arity": lambda: _call(in_specs=[pl.BlockSpec((4,), lambda i, j: (i,))]),
    "too_many_specs": lambda: _call(in_specs=[SPEC, SPEC]),
    "specs_not_a_sequence": lambda: _call(in_specs=SPEC),
    "out_specs_mismatch": lambda: _call(out_specs=[SPEC, SPEC]),
    "too_many_args": lambda: _call(args=(X8, X8)),
    "kernel_too_few_refs": lambda: _call(kernel=lambda x_ref: None),
    "kernel_too_many_refs": lambda: _call(kernel=lambda x_ref, o_ref, extra: None),
    "kernel_returns": lambda: _call(kernel=lambda x_ref, o_ref: x_ref[...]),
    "store_shape": lambda: _call(kernel=lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[:2])),
    "alias_index": lambda: _call(input_output_aliases={0: 1}),
    "alias_type": lambda: _call(out_shape=jax.ShapeDtypeStruct((8,), jnp.int32),
                                kernel=lambda x_ref, o_ref: None, input_output_aliases={0: 0}),
    "program_id_axis": lambda: _call(kernel=lambda x_ref, o_ref: o_ref.__setitem__(
        ..., x_ref[...] + pl.program_id(1))),
    "static_ds_out_of_bounds": lambda: _call(kernel=lambda x_ref, o_ref: o_ref.__setitem__(
        ..., x_ref[pl.ds(2, 4)])),
    "captured_tracer": lambda: jax.jit(lambda c: _call(
        kernel=lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + c)))(X8[:4]),
    "out_shape_type": lambda: _call(out_shape=(8,)),
    "grid_spec_and_grid": lambda: pl.pallas_call(_copy, out_shape=S8, grid=(2,),
                                                 grid_spec=pl.GridSpec(grid=(2,)))(X8),
    "compiled_on_cpu": lambda: _call(interpret=False),
    "grad": lambda: jax.grad(lambda x: _call(args=(x,)).sum())(X8),
    "when_vector": lambda: _call(kernel=lambda x_ref, o_ref: pl.when(x_ref[...] > 0)(
        lambda: None)),
}

def bad_classes():
    out = {}
    for name, fn in BAD.items():
        try:
            fn()
            out[name] = None
        except Exception as e:
            out[name] = type(e).__name__
    return out
'''


def _namespace(library, jnp_, lax_, pl_, plgpu_, pltpu_) -> dict:
    ns = {"jax": library, "jnp": jnp_, "lax": lax_, "pl": pl_, "plgpu": plgpu_, "pltpu": pltpu_}
    exec(CASES + BAD_CASES, ns)  # noqa: S102 - the shared test kernels
    return ns


PLAX = _namespace(plax, jnp, lax, pl, plgpu, pltpu)
CASE_NAMES = sorted(n[len("case_"):] for n in PLAX if n.startswith("case_"))


@pytest.fixture(scope="module")
def plax_results():
    return {name: np.asarray(PLAX["case_" + name]()) for name in CASE_NAMES}


@pytest.fixture(scope="module")
def jax_results():
    code = ("from jax import lax\nfrom jax.experimental import pallas as pl\n"
            "from jax.experimental.pallas import tpu as pltpu, triton as plgpu\n"
            + CASES + BAD_CASES + """
result = {"cases": {n[5:]: np.asarray(f()).tolist() for n, f in list(globals().items())
                    if n.startswith("case_")},
          "bad": bad_classes()}
""")
    return run_reference(code)


def _f32(*shape):
    return np.asarray(PLAX["f32"](*shape))


def _expected() -> dict:
    """The NumPy answer of each case."""
    x8, x46, x3 = _f32(8), _f32(4, 6), _f32(3, 4)
    ids_46 = np.repeat(np.arange(3), 2)[None, :]
    x10 = _f32(10)
    padded = np.concatenate([x10, [np.nan, np.nan]]).reshape(3, 4)
    fori = np.zeros(2, np.float32)
    for i in range(4):
        fori = fori + x8[2 * i:2 * i + 2] * i
    def aliased(x, y):
        out = y.copy()
        out[[0, 1, 4, 5]] += x[[0, 1, 4, 5]]
        return out
    x28 = _f32(2, 8)
    scaled = lambda x: x * 2 + np.repeat([0, 1], 4)  # noqa: E731
    running = lambda x: 2 * np.concatenate([x[:4], x[:4] + x[4:]])  # noqa: E731
    x, y = _f32(8, 6), _f32(6, 4)
    y8 = x8 + 0.5
    return {
        "add_1d": x8 + 10 * x8,
        "add_2d": x46 * (x46 + 1) + ids_46,
        "matmul": x @ y,
        "masked": np.concatenate([np.exp(x10) * 2, padded.ravel()]),
        "fori_program_id": np.concatenate([fori * 3 + p for p in range(3)]),
        "aliases": aliased(x8, 100 + x8),
        "vmap_aliases": np.stack([[aliased(r, 100 + x8) for r in x28],
                                  [aliased(x8, 100 + r) for r in x28]]),
        "loop": np.concatenate([[3.0], x8[1:] * np.repeat(np.arange(0, 8, 2), 2)[1:]]),
        "scratch": np.concatenate([running(x8), *map(running, _f32(2, 8))]),
        "run_scoped": (x8 + 1) * 2,
        "run_scoped_result": x8 * 2 + 3,
        "sync_copy": _f32(8, 128)[:1] + _f32(8, 128)[1:2] * (_f32(1, 128) + 1),
        "views": np.stack([_f32(2, 4)[1], _f32(2, 4)[0] * 2, [0, 7, 7, 0],
                           [*_f32(2, 4)[1, :2], -1, 0]]),
        "squeezed": x3 * np.arange(1, 4)[:, None],
        "vmap": np.stack([scaled(r) for r in _f32(3, 8)]),
        "vmap_axis1": np.stack([scaled(c) for c in _f32(8, 3).T]),
        "vmap_matmul": _f32(2, 8, 6) @ y,
        "jvp": np.stack([np.sin(x8) * y8, np.cos(x8) * y8 + np.sin(x8) * y8]),
        "atomic": np.concatenate([np.maximum(x8[:4], 1.5), np.ones(4)]),
    }


@pytest.mark.parametrize("name", CASE_NAMES)
def test_against_numpy(plax_results, name):
    np.testing.assert_allclose(plax_results[name], _expected()[name], rtol=2e-6, atol=1e-5,
                               equal_nan=name == "masked")


@requires_jax
def test_against_jax_interpret_mode(plax_results, jax_results):
    assert sorted(jax_results["cases"]) == CASE_NAMES
    for name in CASE_NAMES:
        np.testing.assert_allclose(
            np.asarray(plax_results[name], np.float64),
            np.asarray(jax_results["cases"][name], np.float64),
            rtol=2e-6, atol=1e-5, equal_nan=True, err_msg=name)


def test_bad_inputs_raise_clear_errors():
    messages = {
        "block_rank": "must have the same number of dimensions as the array shape (8,)",
        "index_map_count": "must return 1 values to match block_shape=(Blocked(4),)",
        "index_map_float": "must return integer scalars. Output[0] has type f32[]",
        "too_many_specs": "Pytree for `in_specs` and `inputs` do not match",
        "specs_not_a_sequence": "`in_specs` must be a tuple or a list",
        "out_specs_mismatch": "Pytree for `out_specs` and `out_shape` do not match",
        "kernel_returns": "should return None",
        "store_shape": "Invalid shape for `swap`",
        "alias_index": "output index 1 outside the range [0, 1)",
        "alias_type": "abstract value f32[8] and to output with a different abstract value i32[8]",
        "program_id_axis": "Axis 1 is out of bounds for grid (2,)",
        "static_ds_out_of_bounds": "Out of bound slice: start=2, size=4, stride=1, dim=4.",
        "captured_tracer": "captures constants [f32[4]]. You should pass them as inputs.",
        "out_shape_type": "Invalid out_shape type",
        "grid_spec_and_grid": "then `grid` must be `()`",
        "compiled_on_cpu": "Only interpret mode is supported on CPU backend.",
        "grad": "Linearization failed to produce known values for all output primals",
        "when_vector": "Pred must be a scalar",
    }
    for name, fn in PLAX["BAD"].items():
        with pytest.raises(Exception) as info:
            fn()
        assert messages.get(name, "") in str(info.value), (name, info.value)
    assert PLAX["bad_classes"]()["index_map_arity"] == "TypeError"


@requires_jax
def test_bad_inputs_raise_jax_classes(jax_results):
    assert PLAX["bad_classes"]() == jax_results["bad"]


def test_program_id_outside_a_kernel():
    with pytest.raises(ValueError, match="only meaningful inside a pallas_call kernel"):
        pl.program_id(0)


def test_edge_blocks_read_padding_and_drop_writes_past_the_end():
    """A block past the array's end reads NaN/INT_MIN padding; its writes there vanish."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1
    spec = pl.BlockSpec((4,), lambda i: (i,))
    out = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((6,), jnp.int32), grid=(2,),
                         in_specs=[spec], out_specs=spec, interpret=True)(jnp.arange(6))
    np.testing.assert_array_equal(out, np.arange(1, 7))
    peek = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...]),
                          out_shape=plax.ShapeDtypeStruct((2, 4), jnp.int32), grid=(2,),
                          in_specs=[spec], out_specs=pl.BlockSpec((None, 4), lambda i: (i, 0)),
                          interpret=True)(jnp.arange(6, dtype=jnp.int32))
    lowest = np.iinfo(np.int32).min
    np.testing.assert_array_equal(peek, [[0, 1, 2, 3], [4, 5, lowest, lowest]])


def test_traced_once_per_argument_types():
    calls = []

    def kernel(x_ref, o_ref):
        calls.append(1)
        o_ref[...] = x_ref[...] * 3

    f = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32),
                       interpret=True)
    for k in range(2):
        np.testing.assert_allclose(f(jnp.full((4,), float(k))), np.full(4, 3.0 * k))
    assert len(calls) == 1


def test_jvp_with_a_zero_tangent_and_an_accumulated_result():
    """A constant operand (JAX 0.10.2 fails on this one) and a result that every step of
    the grid adds to: its tangent accumulates alike."""
    def kernel(x_ref, c_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...] ** 2 * c_ref[...]
    spec = pl.BlockSpec((2,), lambda i: (i,))
    f = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((2,), jnp.float32), grid=(3,),
                       in_specs=[spec, spec], out_specs=pl.BlockSpec((2,), lambda i: (0,)),
                       interpret=True)
    x, c = _f32(6), _f32(6) + 5
    out, t = plax.jvp(lambda x: f(x, c), (jnp.asarray(x),), (jnp.ones(6, jnp.float32),))
    np.testing.assert_allclose(out, (x ** 2 * c).reshape(3, 2).sum(0), rtol=1e-6)
    np.testing.assert_allclose(t, (2 * x * c).reshape(3, 2).sum(0), rtol=1e-6)


def test_jvp_of_a_kernel_using_program_ids():
    """The blocked matmul (its zero-init reads `program_id`, which JAX 0.10.2's jvp
    cannot trace): the tangent is dx @ y + x @ dy."""
    x, y = jnp.asarray(_f32(8, 6)), jnp.asarray(_f32(6, 4))
    dx = jnp.ones((8, 6), jnp.float32)
    _, t = plax.jvp(lambda a, b: PLAX["blocked_matmul"](a, b, 4, 2, 3), (x, y), (dx, y))
    np.testing.assert_allclose(t, np.asarray(dx) @ np.asarray(y) + np.asarray(x) @ np.asarray(y),
                               rtol=1e-6)


def test_debug_print_inside_the_grid(capfd):
    def kernel(x_ref, o_ref):
        pl.debug_print("step {} first {}", pl.program_id(0), x_ref[0])
        o_ref[...] = x_ref[...]
    spec = pl.BlockSpec((2,), lambda i: (i,))
    out = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((4,), jnp.float32), grid=(2,),
                         in_specs=[spec], out_specs=spec, interpret=True)(jnp.arange(4.0))
    out.block_until_ready()
    printed = capfd.readouterr().out
    assert "step 0 first 0.0" in printed and "step 1 first 2.0" in printed, printed


def test_scratch_shapes_must_be_buffer_types():
    with pytest.raises(TypeError, match=r"scratch_shapes\[0\] must be a scratch buffer type"):
        pl.pallas_call(lambda o_ref, s_ref: None,
                       out_shape=plax.ShapeDtypeStruct((2,), jnp.float32),
                       scratch_shapes=[plax.ShapeDtypeStruct((2,), jnp.float32)], interpret=True)


def test_compiled_kernel_without_a_platform_lowering_is_a_clear_error():
    """Pallas has no platform code: a platform with no `pallas_call` lowering of its
    own (here CUDA; plax-tpu gives TPU one) names the way out."""
    kernel = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + 1),
                            out_shape=plax.ShapeDtypeStruct((8, 128), jnp.float32))
    traced = plax.jit(kernel).trace(plax.ShapeDtypeStruct((8, 128), jnp.float32))
    with pytest.raises(NotImplementedError, match="no Pallas lowering for platform 'cuda'"):
        traced.lower(lowering_platforms=("cuda",))


def _copy_call(src_rows: int, dst_rows: int):
    def kernel(x_hbm, o_ref, sem):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(0, src_rows)], o_ref.at[pl.ds(0, dst_rows)],
                                     sem)
        copy.start()
        copy.wait()
    return pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((16, 128), jnp.float32),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          scratch_shapes=[pltpu.SemaphoreType.DMA], interpret=True)


def test_async_copy_in_interpret_mode_copies_the_view():
    x = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
    out = np.asarray(_copy_call(16, 16)(x))
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("case, call, error, message", [
    ("copy_shapes", lambda x: _copy_call(8, 16)(x), ValueError, "differ in shape"),
    ("sync_copy_trees", lambda x: pl.pallas_call(
        lambda x_ref, o_ref: pltpu.sync_copy((x_ref,), [o_ref]), interpret=True,
        out_shape=plax.ShapeDtypeStruct((16, 128), jnp.float32))(x),
     ValueError, "pytree structure"),
    ("sync_copy_add", lambda x: pl.pallas_call(
        lambda x_ref, o_ref: pltpu.sync_copy(x_ref, o_ref, add=True), interpret=True,
        out_shape=plax.ShapeDtypeStruct((16, 128), jnp.float32))(x),
     NotImplementedError, "add=True"),
    ("roll_negative", lambda x: pltpu.roll(x, -1, 0), ValueError, "shift must be non-negative"),
    ("roll_axis", lambda x: pltpu.roll(x, 1, 5), ValueError, "axis is out of range"),
    ("multiple_of", lambda x: pl.multiple_of(x, 0), ValueError, "positive ints"),
    ("prefetch_count", lambda x: pl.pallas_call(
        lambda *refs: None, out_shape=plax.ShapeDtypeStruct((8,), jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=-1), interpret=True)(x),
     TypeError, "num_scalar_prefetch must be a non-negative int"),
])
def test_kernel_language_bad_inputs(case, call, error, message):
    with pytest.raises(error, match=message):
        call(np.zeros((16, 128), np.float32))


def test_masked_store_mask_must_match_the_value():
    def kernel(x_ref, o_ref):
        pltpu.store(o_ref, x_ref[...], mask=jnp.ones((8,), bool))
    call = pl.pallas_call(kernel, out_shape=plax.ShapeDtypeStruct((8, 128), jnp.float32),
                          interpret=True)
    with pytest.raises(ValueError, match="mask must be a boolean array of the value's shape"):
        call(np.zeros((8, 128), np.float32))


def test_scalar_prefetch_in_interpret_mode():
    def kernel(idx_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...] + idx_ref[pl.program_id(0)].astype(jnp.float32)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(3,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, idx: (idx[i], 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, idx: (i, 0)))
    call = pl.pallas_call(kernel, grid_spec=spec, interpret=True,
                          out_shape=plax.ShapeDtypeStruct((24, 128), jnp.float32))
    idx = np.array([2, 0, 1], np.int32)
    x = np.random.default_rng(0).standard_normal((24, 128)).astype(np.float32)
    expected = np.concatenate([x[8 * j:8 * j + 8] + j for j in idx])
    np.testing.assert_allclose(np.asarray(call(idx, x)), expected)
