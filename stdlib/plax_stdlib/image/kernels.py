"""The interpolation kernels of `plax.image`, as functions of the distance `x >= 0`
between a sample position and a pixel centre (in pixels)."""
from __future__ import annotations

import numpy as np

from plax_stdlib import numpy as jnp


def triangle(x):
    """Linear interpolation: weight falling from 1 at the centre to 0 one pixel away."""
    return jnp.maximum(0.0, 1.0 - x)


def keys_cubic(x, a: float = -0.5):
    """Keys' cubic convolution kernel (support 2). a = -0.5 is the one Pillow,
    TensorFlow and PyTorch (with antialiasing) use; a = -0.75 is OpenCV's."""
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))


def opencv_cubic(x):
    return keys_cubic(x, -0.75)


def lanczos(radius: int):
    """The Lanczos window of `radius`: sinc(x) sinc(x / radius) for x < radius."""
    def kernel(x):
        safe = jnp.where(x > 1e-3, x, 1.0)
        value = radius * jnp.sin(np.pi * safe) * jnp.sin(np.pi * safe / radius) / (
            np.pi ** 2 * safe * safe)
        return jnp.where(x > radius, 0.0, jnp.where(x > 1e-3, value, 1.0))
    kernel.__name__ = f"lanczos{radius}"
    return kernel
