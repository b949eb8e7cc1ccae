"""plax.scipy.ndimage.map_coordinates against SciPy (JAX's 'constant' and 'wrap' are
SciPy's 'grid-' modes), derivatives, bad input, and JAX (halves, integer inputs)."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy import ndimage as pn
from plax.test_util import check_grads

sn = pytest.importorskip("scipy.ndimage")

RNG = np.random.default_rng(3)
SCIPY_MODE = {"constant": "grid-constant", "wrap": "grid-wrap"}


@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 2), (1, 5)], ids=str)
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_against_scipy(shape, mode):
    x = RNG.normal(size=shape)
    coordinates = [RNG.uniform(-3, n + 2, size=(2, 4)) for n in shape]
    with plax.enable_x64(True):
        for order in (0, 1):
            got = pn.map_coordinates(x, coordinates, order, mode=mode, cval=-1.5)
            want = sn.map_coordinates(x, coordinates, order=order,
                                      mode=SCIPY_MODE.get(mode, mode), cval=-1.5)
            assert got.shape == (2, 4)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_jit_vmap_and_derivatives():
    image = RNG.normal(size=(4, 5)).astype(np.float32)
    rows = np.array([0.5, 1.25, 2.75], np.float32)
    fn = plax.jit(lambda c: pn.map_coordinates(image, [c, c + 1], 1, mode="nearest"))
    np.testing.assert_allclose(fn(rows), pn.map_coordinates(image, [rows, rows + 1], 1,
                                                           mode="nearest"), rtol=1e-6)
    batch = np.stack([rows, rows + 0.5])
    np.testing.assert_allclose(plax.vmap(fn)(batch), np.stack([fn(r) for r in batch]),
                               rtol=1e-6)
    with plax.enable_x64(True):
        check_grads(lambda img, c: pn.map_coordinates(img, [c, 2 * c], 1, mode="mirror"),
                    (RNG.normal(size=(4, 5)), np.array([0.3, 1.6, 2.2])), order=2)


def test_bad_input():
    with pytest.raises(ValueError, match="length input.ndim=2, but 1 were given"):
        pn.map_coordinates(np.ones((3, 3)), [np.zeros(2)], 1)
    with pytest.raises(ValueError, match="must have one shape"):
        pn.map_coordinates(np.ones((3, 3)), [np.zeros(2), np.zeros(3)], 1)
    with pytest.raises(NotImplementedError, match="order=3 is not supported"):
        pn.map_coordinates(np.ones(3), [np.zeros(2)], 3)
    with pytest.raises(NotImplementedError, match="mode='grid-wrap' is not supported"):
        pn.map_coordinates(np.ones(3), [np.zeros(2)], 1, mode="grid-wrap")


_JAX_BODY = """
map_coordinates = lib.scipy.ndimage.map_coordinates
x = np.arange(5.0, dtype=np.float32) ** 2
c = np.array([-2.3, -1.5, -0.5, -0.2, 0.5, 1.5, 2.5, 3.7, 4.2, 4.5, 5.5, 6.8], np.float32)
for mode in ("constant", "nearest", "wrap", "mirror", "reflect"):
    for order in (0, 1):
        results[f"{mode}{order}"] = map_coordinates(x, [c], order, mode=mode, cval=-1.0)
ints = np.arange(12, dtype=np.int32).reshape(3, 4)
results["int"] = map_coordinates(ints, [c[:6] / 2, c[6:] / 3], 1)
results["f16"] = map_coordinates(x.astype(np.float16), [c], 1)
results["int_coords"] = map_coordinates(x, [np.array([0, 3, 7])], 1, cval=2)
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {}, rtol=1e-5, atol=1e-5,
                       tolerances={"f16": (3e-3, 3e-2)})
