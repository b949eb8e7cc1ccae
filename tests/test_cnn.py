"""A small CNN (two convolutions, max pooling by `reduce_window`, a dense head)
learns a toy task under `jit(grad)`: which half of an image holds a bright blob."""
import numpy as np

import plax
from plax import lax
from plax import numpy as jnp

DN = ("NHWC", "HWIO", "NHWC")


def init_params(rng):
    def normal(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    return {"c1": normal(3, 3, 1, 4, scale=0.5), "b1": np.zeros(4, np.float32),
            "c2": normal(3, 3, 4, 8, scale=0.25), "b2": np.zeros(8, np.float32),
            "w": normal(4 * 4 * 8, 2, scale=0.1), "b": np.zeros(2, np.float32)}


def logits(params, images):
    x = lax.conv_general_dilated(images, params["c1"], (1, 1), "SAME", dimension_numbers=DN)
    x = jnp.maximum(x + params["b1"], 0.0)
    x = lax.conv_general_dilated(x, params["c2"], (1, 1), "SAME", dimension_numbers=DN)
    x = jnp.maximum(x + params["b2"], 0.0)
    x = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return x.reshape(x.shape[0], -1) @ params["w"] + params["b"]


def loss(params, images, labels):
    z = logits(params, images)
    z = z - jnp.max(z, axis=1, keepdims=True)
    log_probs = z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(log_probs * labels, axis=1))


def toy_data(rng, n=32):
    images = rng.uniform(0, 0.2, (n, 8, 8, 1)).astype(np.float32)
    sides = rng.integers(0, 2, n)
    for i, side in enumerate(sides):
        r, c = rng.integers(1, 6), rng.integers(0, 2) + 4 * side + 1
        images[i, r:r + 2, c:c + 2, 0] += 1.0
    return images, np.eye(2, dtype=np.float32)[sides]


def test_cnn_trains_under_jit_grad():
    rng = np.random.default_rng(0)
    params = init_params(rng)
    images, labels = toy_data(rng)

    @plax.jit
    def step(params, images, labels):
        value, grads = plax.value_and_grad(loss)(params, images, labels)
        return value, plax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)

    losses = []
    for _ in range(30):
        value, params = step(params, images, labels)
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(np.isfinite(losses))
    accuracy = np.mean(np.argmax(np.asarray(logits(params, images)), 1) == labels.argmax(1))
    assert accuracy > 0.9
