"""`conv_general_dilated_local`: the unshared (locally connected) convolution, where
every output position has its own kernel. The input's patches
(`conv_general_dilated_patches`) meet the kernel in one `dot_general` whose batch
dimensions are the output's spatial positions."""
from __future__ import annotations

from plax.extend.core import get_aval
from plax_stdlib.lax.convolution import conv_dimension_numbers, conv_general_dilated_patches
from plax_stdlib.lax.dot_general import dot_general
from plax_stdlib.lax.shape_ops import transpose


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """A convolution whose kernel differs at every output position (a locally
    connected layer): no weight sharing across space.

    `rhs` holds, in its layout, (out_features, in_features * prod(filter_shape),
    *output_spatial): one kernel per output position, over the patches of
    `conv_general_dilated_patches`.

    Args:
        lhs: the input.
        rhs: the per-position kernels.
        window_strides: the stride per spatial dimension.
        padding: `"VALID"`, `"SAME"` or `(low, high)` pairs.
        filter_shape: the window's spatial shape.
        lhs_dilation: the input's dilation.
        rhs_dilation: the window's dilation.
        dimension_numbers: the layouts, as for `conv_general_dilated`.
        precision: a `lax.Precision`, or None.

    Returns:
        The output, (N, out_features, output spatial...) in the default layout.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> x = jnp.arange(4.0).reshape(1, 1, 4)
        >>> w = jnp.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]])  # 1 out, 2 taps, 3 positions
        >>> lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,))
        Array([[[0., 2., 3.]]], dtype=float32)
    """
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"conv_general_dilated_local: unsupported precision {precision!r}")
        patch_precision = precision[0]
    else:
        patch_precision = precision
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers,
                                           patch_precision)
    lhs_shape = get_aval(lhs).shape
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
        lhs_shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    # The patches are laid out like the output: their features sit at out_spec[1].
    spatial_out, spatial_rhs = out_spec[2:], rhs_spec[2:]
    order = sorted(range(len(spatial_out)), key=lambda i: spatial_out[i])
    batch = ([spatial_out[i] for i in order], [spatial_rhs[i] for i in order])
    out = dot_general(patches, rhs, (([out_spec[1]], [rhs_spec[1]]), batch),
                      precision=precision)
    # dot_general gives (spatial in sorted order..., batch N, out features O).
    ndim = len(out_spec)
    positions = [0] * ndim
    for k, i in enumerate(order):
        positions[spatial_out[i]] = k
    positions[out_spec[0]], positions[out_spec[1]] = ndim - 2, ndim - 1
    return transpose(out, tuple(positions))
