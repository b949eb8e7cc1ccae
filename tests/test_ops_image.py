"""plax.ops (segment reductions) and plax.image (resize, scale_and_translate): against
loops in NumPy, known answers, and JAX in a subprocess."""
from __future__ import annotations

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.image
import plax.ops
from plax.errors import ConcretizationTypeError

RNG = np.random.RandomState(0)
DATA = RNG.randn(7, 3).astype(np.float32)
IDS = np.array([0, 3, 3, 1, -1, 9, 0])  # -1 and 9 are outside 4 segments

_NUMPY_REDUCERS = {"segment_sum": (np.add, 0.0), "segment_prod": (np.multiply, 1.0),
                   "segment_max": (np.maximum, -np.inf), "segment_min": (np.minimum, np.inf)}


def _segments_by_loop(name, data, ids, n):
    combine, identity = _NUMPY_REDUCERS[name]
    out = np.full((n,) + data.shape[1:], identity, np.float64)
    for row, s in zip(data, ids):
        if 0 <= s < n:
            out[s] = combine(out[s], row)
    return out


@pytest.mark.parametrize("name", sorted(_NUMPY_REDUCERS))
def test_segment_reductions_match_a_loop(name):
    fn = getattr(plax.ops, name)
    np.testing.assert_allclose(fn(DATA, IDS, num_segments=4),
                               _segments_by_loop(name, DATA, IDS, 4), rtol=1e-6)
    np.testing.assert_allclose(fn(DATA, IDS, 4, bucket_size=2),
                               _segments_by_loop(name, DATA, IDS, 4), rtol=1e-6)
    clipped = np.clip(IDS, 0, 3)
    np.testing.assert_allclose(fn(DATA, IDS, 4, mode="clip"),
                               _segments_by_loop(name, DATA, clipped, 4), rtol=1e-6)


def test_segment_options():
    ids = np.array([0, 0, 1, 2, 2, 2])
    data = np.arange(6, dtype=np.int32)
    np.testing.assert_array_equal(plax.ops.segment_sum(data, ids), [1, 2, 12])  # 3 segments
    np.testing.assert_array_equal(plax.ops.segment_sum(data, ids, indices_are_sorted=True,
                                                       num_segments=3), [1, 2, 12])
    lowest = np.iinfo(np.int32).min
    np.testing.assert_array_equal(plax.ops.segment_max(data, ids, 5), [1, 2, 5, lowest, lowest])
    jitted = plax.jit(lambda d, i: plax.ops.segment_sum(d, i, num_segments=3))
    np.testing.assert_array_equal(jitted(data, ids), [1, 2, 12])
    assert plax.ops.segment_sum(np.ones((0, 2)), np.zeros(0, np.int32), 2).shape == (2, 2)


def test_segment_gradients():
    ids = np.array([1, 0, 1, 2])
    data = RNG.randn(4, 2).astype(np.float32)
    weights = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    grad = plax.grad(lambda d: (plax.ops.segment_sum(d, ids, 3) * weights).sum())(data)
    np.testing.assert_allclose(grad, weights[ids])
    grad = plax.grad(lambda d: plax.ops.segment_max(d, ids, 3).sum())(data)
    winners = np.zeros_like(data)
    for s in range(3):
        rows = np.flatnonzero(ids == s)
        for c in range(2):
            winners[rows[np.argmax(data[rows, c])], c] = 1.0
    np.testing.assert_allclose(grad, winners)


def test_segment_bad_inputs():
    with pytest.raises(TypeError, match="segment_ids must be integers"):
        plax.ops.segment_sum(DATA, IDS.astype(np.float32), 4)
    with pytest.raises(ValueError, match=r"one id per row of data.*\(5,\).*\(7, 3\)"):
        plax.ops.segment_sum(DATA, IDS[:5], 4)
    with pytest.raises(ValueError, match="num_segments must be non-negative"):
        plax.ops.segment_sum(DATA, IDS, -1)
    with pytest.raises(ValueError, match="bucket_size must be positive"):
        plax.ops.segment_sum(DATA, IDS, 4, bucket_size=0)
    with pytest.raises(ConcretizationTypeError, match="segment_sum without num_segments"):
        plax.jit(lambda d, i: plax.ops.segment_sum(d, i))(DATA, IDS)
    with pytest.raises(ValueError, match="unknown gather mode"):
        plax.ops.segment_min(DATA, IDS, 4, mode="wrap")


# --- plax.image ------------------------------------------------------------------------------

IMAGE = RNG.rand(6, 8).astype(np.float32)


def test_nearest_and_linear_known_answers():
    np.testing.assert_array_equal(plax.image.resize(IMAGE, (12, 16), "nearest"),
                                  IMAGE.repeat(2, 0).repeat(2, 1))
    assert plax.image.resize(IMAGE.astype(np.int8), (3, 4), "nearest").dtype == np.int8
    row = np.array([0.0, 1.0, 4.0], np.float32)
    # Half-pixel centres: output x maps to (x + 0.5) / 2 - 0.5, clamped weights at edges.
    expected = np.interp((np.arange(6) + 0.5) / 2 - 0.5, [0, 1, 2], row)
    np.testing.assert_allclose(plax.image.resize(row, (6,), "linear", antialias=False),
                               expected, rtol=1e-6)
    out = plax.image.resize(np.arange(12).reshape(3, 4), (6, 2), "bilinear")
    assert out.dtype == np.float32 and out.shape == (6, 2)


def test_area_and_antialias_properties():
    blocks = IMAGE.reshape(3, 2, 4, 2).mean(axis=(1, 3))
    np.testing.assert_allclose(plax.image.resize(IMAGE, (3, 4), "area"), blocks, rtol=1e-5)
    flat = np.full((9, 9), 2.5, np.float32)
    for method in ["linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area"]:
        for antialias in [True, False]:
            out = plax.image.resize(flat, (4, 13), method, antialias=antialias)
            np.testing.assert_allclose(out, np.full((4, 13), 2.5), rtol=1e-5,
                                       err_msg=f"{method} antialias={antialias}")
    same = plax.image.resize(IMAGE, IMAGE.shape, "lanczos3")
    np.testing.assert_allclose(same, IMAGE, rtol=1e-6)


def test_scale_and_translate_shifts_and_differentiates():
    row = np.arange(8.0, dtype=np.float32) ** 2
    shifted = plax.image.scale_and_translate(row, (8,), (0,), np.array([1.0]),
                                             np.array([2.0]), "linear")
    np.testing.assert_allclose(shifted[2:], row[:-2], rtol=1e-6)
    np.testing.assert_array_equal(shifted[:2], [0.0, 0.0])  # from outside the input

    def loss(t):
        return plax.image.scale_and_translate(row, (8,), (0,), np.array([1.0], np.float32), t,
                                              "linear").sum()
    t0 = np.array([0.3], np.float32)
    eps = 1e-2
    numeric = (loss(t0 + eps) - loss(t0 - eps)) / (2 * eps)
    np.testing.assert_allclose(plax.grad(loss)(t0), [numeric], rtol=1e-3)


def test_image_bad_inputs():
    with pytest.raises(ValueError, match="one entry per dimension of the image"):
        plax.image.resize(IMAGE, (3,), "linear")
    with pytest.raises(ValueError, match='Unknown resize method "bilinearish"'):
        plax.image.resize(IMAGE, (3, 4), "bilinearish")
    with pytest.raises(TypeError, match="method must be a string or a ResizeMethod"):
        plax.image.resize(IMAGE, (3, 4), 3)
    with pytest.raises(ValueError, match="does not support nearest"):
        plax.image.scale_and_translate(IMAGE, (3, 4), (0, 1), [1.0, 1.0], [0.0, 0.0],
                                       "nearest")
    with pytest.raises(ValueError, match="dimension 1 is not spatial"):
        plax.image.scale_and_translate(IMAGE, (3, 5), (0,), [0.5], [0.0], "linear")
    with pytest.raises(ValueError, match="one entry per spatial dimension"):
        plax.image.scale_and_translate(IMAGE, (3, 8), (0,), [0.5, 1.0], [0.0], "linear")
    with pytest.raises(ValueError, match="non-negative"):
        plax.image.resize(IMAGE, (-1, 4), "linear")


@requires_jax
def test_ops_and_image_match_jax():
    code = """
    rng = np.random.RandomState(1)
    x = rng.randn(5, 7, 2).astype(np.float32)
    result = {}
    for method, shape, aa in [("cubic", (3, 11, 2), True), ("cubic-pytorch", (8, 5, 2), False),
                              ("lanczos5", (9, 9, 2), False), ("area", (2, 3, 2), True)]:
        result[method] = np.asarray(jax.image.resize(x, shape, method, antialias=aa)).tolist()
    result["grad"] = np.asarray(jax.jit(jax.grad(lambda s: jax.image.scale_and_translate(
        x, (6, 5, 2), (0, 1), s, jnp.array([0.5, -1.0]), "lanczos3").sum()))(
        jnp.array([1.2, 0.6]))).tolist()
    ids = np.array([2, 0, 2, 5, -3, 1])
    d = rng.randn(6, 3).astype(np.float32)
    result["segment_prod"] = np.asarray(jax.ops.segment_prod(d, ids, bucket_size=4)).tolist()
    result["segment_max"] = np.asarray(
        jax.ops.segment_max(d.astype(np.int32), ids, 3, mode="clip")).tolist()
    result["segment_min"] = np.asarray(jax.ops.segment_min(d, ids, 4)).tolist()
    """
    theirs, mine = run_reference(code, "jax"), run_reference(code, "plax")
    assert theirs.keys() == mine.keys()
    for key in theirs:
        np.testing.assert_allclose(np.array(mine[key], dtype=float),
                                   np.array(theirs[key], dtype=float), rtol=2e-5, atol=2e-5,
                                   err_msg=key)
