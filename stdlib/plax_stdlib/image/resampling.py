"""`resize` and `scale_and_translate`: resampling an image, one spatial dimension at a
time, as a product with a weight matrix.

Pixels are half-centred: pixel `i` of a dimension covers `[i, i + 1)` and has its
centre at `i + 0.5`. An output pixel `j` maps back to the input position
`(j + 0.5 - translation) / scale`, and its value is a weighted sum of input pixels,
the weights coming from the method's kernel of the distance to each input centre.
When downsampling with `antialias`, the kernel is widened by `1 / scale`, so it
low-pass filters as it interpolates. Weights of each output pixel are normalised to
sum to 1; outputs that map outside the input get 0 (or, for 'cubic-pytorch' without
antialiasing, the image's edges are repeated instead, as PyTorch does). 'area'
weighs each input pixel by how much of the output pixel's footprint it covers.
Everything is differentiable, in the image and in `scale` and `translation`.
"""
from __future__ import annotations

import enum
import functools
import operator
from typing import Any, Callable, Sequence

import numpy as np

import plax
from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.image import kernels
from plax_stdlib.numpy import util

_TINY = 1000.0 * float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
    """How `resize` and `scale_and_translate` interpolate."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(name: str) -> "ResizeMethod":
        method = _NAMES.get(name)
        if method is None:
            raise ValueError(f'Unknown resize method "{name}"; expected one of '
                             f"{sorted(_NAMES)}")
        return method


_NAMES = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
          "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
          "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
          "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
          "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
          "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
          "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}

# method → (kernel radius in pixels, kernel); 'area' has none: it measures overlaps.
_KERNELS: dict[ResizeMethod, tuple[int, Callable]] = {
    ResizeMethod.LINEAR: (1, kernels.triangle),
    ResizeMethod.LANCZOS3: (3, kernels.lanczos(3)),
    ResizeMethod.LANCZOS5: (5, kernels.lanczos(5)),
    ResizeMethod.CUBIC: (2, kernels.keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, kernels.opencv_cubic),
}


def _method(method: str | ResizeMethod) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a string or a ResizeMethod, got {method!r}")
    return method


def _normalised(weights, total):
    return jnp.where(jnp.abs(total) > _TINY, weights / jnp.where(total != 0, total, 1.0), 0.0)


def weight_matrix(in_size: int, out_size: int, scale, translation, method: ResizeMethod,
                  antialias: bool):
    """The (in_size, out_size) matrix whose column `j` holds output pixel `j`'s
    weights over the input pixels of one dimension."""
    dtype = dtypes.result_type(scale, translation)
    inv_scale = 1.0 / scale
    out_index = jnp.arange(out_size, dtype=dtype)
    sample = (out_index + 0.5 - translation) * inv_scale - 0.5  # in input pixel units
    if method is ResizeMethod.CUBIC_PYTORCH:  # (without antialias) repeat the edges
        radius, kernel = _KERNELS[method]
        positions = jnp.arange(-radius, in_size + radius, dtype=dtype)
        weights = kernel(jnp.abs(sample[None, :] - positions[:, None]))
        owners = np.clip(np.arange(-radius, in_size + radius), 0, in_size - 1)
        weights = jnp.zeros((in_size, out_size), dtype).at[owners].add(weights)
        return _normalised(weights, jnp.sum(weights, axis=0, keepdims=True))
    positions = jnp.arange(in_size, dtype=dtype)[:, None]
    if method is ResizeMethod.AREA:
        left = (out_index - translation) * inv_scale  # the output pixel's footprint
        weights = jnp.maximum(0.0, jnp.minimum(left + inv_scale, positions + 1.0)
                              - jnp.maximum(left, positions))
    else:
        _, kernel = _KERNELS[method]
        width = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
        weights = kernel(jnp.abs(sample[None, :] - positions) / width)
    weights = _normalised(weights, jnp.sum(weights, axis=0, keepdims=True))
    inside = (sample >= -0.5) & (sample <= in_size - 0.5)
    return jnp.where(inside[None, :], weights, 0.0)


def _resample(image, shape: tuple[int, ...], spatial_dims: Sequence[int], scales,
              translations, method: ResizeMethod, antialias: bool, precision):
    out = image
    for d, scale, translation in zip(spatial_dims, scales, translations):
        w = weight_matrix(image.shape[d], shape[d], scale, translation, method, antialias)
        out = lax.dot_general(out, w.astype(out.dtype), (((d,), (0,)), ((), ())),
                              precision=precision)
        out = jnp.moveaxis(out, -1, d)
    return out


def _check_shape(name: str, image, shape) -> tuple[int, ...]:
    shape = tuple(operator.index(s) for s in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"{name}: shape must have one entry per dimension of the image; got "
                         f"{shape} for an image of shape {image.shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{name}: shape entries must be non-negative, got {shape}")
    return shape


def _nearest(image, shape: tuple[int, ...]):
    """Each output pixel takes the input pixel its centre falls in."""
    for d, (m, n) in enumerate(zip(image.shape, shape)):
        if m != n:
            picked = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m / n)
                              if n else np.zeros(0, np.float32)).astype(np.int32)
            image = jnp.take(image, np.minimum(picked, m - 1), axis=d)
    return image


def _resize(image, shape, method, antialias, precision):
    if method is ResizeMethod.NEAREST:
        return _nearest(image, shape)
    (image,) = util.promote_dtypes_inexact(image)
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
    scales = [shape[d] / image.shape[d] if shape[d] else 1.0 for d in dims]
    return _resample(image, shape, dims, scales, [0.0] * len(dims), method, antialias,
                     precision)


@functools.cache
def _jitted(fun: Callable) -> Callable:
    """`fun` compiled, its arguments after the arrays static. Through the facade (jit
    is a layer above) and on first use, so importing plax.image loads no transforms."""
    arrays = 1 if fun is _resize else 3
    return plax.jit(fun, static_argnums=tuple(range(arrays, fun.__code__.co_argcount)))


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = lax.Precision.HIGHEST):
    """`image` resampled to `shape` (every dimension, batch and channels included:
    leave those unchanged). 'nearest' keeps the dtype; the other methods ('linear',
    'cubic', 'cubic-pytorch', 'lanczos3', 'lanczos5', 'area') give floats.
    `antialias` filters when downsampling."""
    image = util.as_array(util.ensure_arraylike("resize", image))
    shape = _check_shape("resize", image, shape)
    method = _method(method)
    if any(m == 0 and n > 0 for m, n in zip(image.shape, shape)):
        raise ValueError(f"resize: cannot resize an empty dimension of image shape "
                         f"{image.shape} to {shape}")
    return _jitted(_resize)(image, shape, method, bool(antialias), precision)


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int], scale,
                        translation, method: str | ResizeMethod, antialias: bool = True,
                        precision: Any = lax.Precision.HIGHEST):
    """`image` resampled to `shape` by mapping input position `x` of each dimension in
    `spatial_dims` to `x * scale + translation`; outputs that map outside the input
    are 0. `scale` and `translation` (one entry per spatial dimension) may be traced
    and are differentiated through."""
    image = util.as_array(util.ensure_arraylike("scale_and_translate", image))
    shape = _check_shape("scale_and_translate", image, shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate does not support nearest-neighbour resampling")
    spatial_dims = tuple(util.canonicalize_axis(d, image.ndim) for d in spatial_dims)
    for d in range(image.ndim):
        if d not in spatial_dims and shape[d] != image.shape[d]:
            raise ValueError(f"scale_and_translate: dimension {d} is not spatial, so its "
                             f"size must stay {image.shape[d]}, got shape {shape}")
    (image,) = util.promote_dtypes_inexact(image)
    scale, translation = util.promote_dtypes_inexact(jnp.asarray(scale),
                                                     jnp.asarray(translation))
    if scale.shape != (len(spatial_dims),) or translation.shape != (len(spatial_dims),):
        raise ValueError(f"scale_and_translate: scale and translation need one entry per "
                         f"spatial dimension ({len(spatial_dims)}), got shapes {scale.shape} "
                         f"and {translation.shape}")
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    return _jitted(_scale_and_translate)(image, scale, translation, shape, spatial_dims, method,
                                         bool(antialias), precision)


def _scale_and_translate(image, scale, translation, shape, spatial_dims, method, antialias,
                         precision):
    return _resample(image, shape, spatial_dims, [scale[i] for i in range(len(spatial_dims))],
                     [translation[i] for i in range(len(spatial_dims))], method, antialias,
                     precision)
