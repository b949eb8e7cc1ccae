"""`plax.example_libraries.stax`: JAX's minimal neural-network layer library.

A layer is a pair `(init_fun, apply_fun)`: `init_fun(rng, input_shape)` gives
`(output_shape, params)`, and `apply_fun(params, inputs, **kwargs)` the outputs
(`rng=` is passed down to the layers that draw random numbers, such as `Dropout`).
Combinators (`serial`, `parallel`, `FanOut`, `FanInSum`, ...) build layers out of
layers; `serial` gives each layer its own key, split from the one it is given.
"""
from __future__ import annotations

import functools
import math

from plax_stdlib import lax, numpy as jnp, random
from plax_stdlib.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid,
                            softmax, softplus, standardize)
from plax_stdlib.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "elu", "gelu",
    "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal", "ones",
    "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax",
    "softplus", "standardize", "zeros",
]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

# the initializers the layers default to (made once: initializers are pure)
_DENSE_WEIGHTS, _DENSE_BIASES, _CONV_BIASES = glorot_normal(), normal(), normal(1e-6)


def _no_params(output_shape):
    """An `init_fun` for layers without parameters."""
    return lambda rng, input_shape: (output_shape(input_shape), ())


_shape_kept = _no_params(lambda shape: shape)  # the `init_fun` of shape-keeping layers


def Dense(out_dim, W_init=_DENSE_WEIGHTS, b_init=_DENSE_BIASES):
    """A fully connected layer: `inputs @ W + b`."""
    def init_fun(rng, input_shape):
        w_key, b_key = random.split(rng)
        params = W_init(w_key, (input_shape[-1], out_dim)), b_init(b_key, (out_dim,))
        return input_shape[:-1] + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _conv_layer(shape_of, apply_conv):
    """A convolution layer family; `shape_of(input_shape, kernel_shape, strides,
    padding, dimension_numbers)` is its output shape."""
    def layer(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
              W_init=None, b_init=_CONV_BIASES):
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        strides = strides or (1,) * len(filter_shape)
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

        def init_fun(rng, input_shape):
            spatial = iter(filter_shape)
            kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")]
                            if c == "I" else next(spatial) for c in rhs_spec]
            bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
            w_key, b_key = random.split(rng)
            output_shape = shape_of(input_shape, kernel_shape, strides, padding,
                                    dimension_numbers)
            return output_shape, (W_init(w_key, kernel_shape), b_init(b_key, bias_shape))

        def apply_fun(params, inputs, **kwargs):
            W, b = params
            return apply_conv(inputs, W, strides, padding, dimension_numbers) + b

        return init_fun, apply_fun

    return layer


GeneralConv = _conv_layer(
    lax.conv_general_shape_tuple,
    lambda x, W, strides, padding, dn: lax.conv_general_dilated(
        x, W, strides, padding, (1,) * len(strides), (1,) * len(strides),
        dimension_numbers=dn))
GeneralConv.__name__ = GeneralConv.__qualname__ = "GeneralConv"
GeneralConvTranspose = _conv_layer(
    lax.conv_transpose_shape_tuple,
    lambda x, W, strides, padding, dn: lax.conv_transpose(x, W, strides, padding,
                                                          dimension_numbers=dn))
GeneralConvTranspose.__name__ = GeneralConvTranspose.__qualname__ = "GeneralConvTranspose"
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalizes over `axis` with the batch's own statistics, then scales by `gamma`
    and shifts by `beta` (either may be left out: its parameter is `()`)."""
    axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        beta_key, gamma_key = random.split(rng)
        beta = beta_init(beta_key, shape) if center else ()
        gamma = gamma_init(gamma_key, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        return z + beta[expand] if center else z

    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A layer applying `fun(inputs, **fun_kwargs)`."""
    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return _shape_kept, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _non_spatial_axes(spec, ndim):
    return (0, ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))


def _pooling_layer(reducer, init_value, average: bool = False):
    def layer(window_shape, strides=None, padding="VALID", spec=None):
        """Pools over the spatial axes (all but N and C of `spec`, default NHWC-like:
        batch first, channels last)."""
        spatial_strides = strides or (1,) * len(window_shape)
        dims, steps = list(window_shape), list(spatial_strides)
        for i in sorted(_non_spatial_axes(spec, len(window_shape) + 2)):
            dims.insert(i, 1)
            steps.insert(i, 1)
        dims, steps = tuple(dims), tuple(steps)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, dims, steps, padding)
            unit = (1,) * len(dims)
            return lax.reduce_window_shape_tuple(input_shape, dims, steps, pads, unit,
                                                 unit), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_value, reducer, dims, steps, padding)
            if not average:
                return out
            # Each output divided by the number of inputs its window covered.
            batch_and_channel = _non_spatial_axes(spec, inputs.ndim)
            spatial = [n for i, n in enumerate(inputs.shape) if i not in batch_and_channel]
            counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0., lax.add,
                                       tuple(window_shape), tuple(spatial_strides), padding)
            return out / jnp.expand_dims(counts, sorted(batch_and_channel))

        return init_fun, apply_fun

    return layer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., average=True)

# Layers that take no arguments are layers themselves.
Flatten = (_no_params(lambda shape: (shape[0], math.prod(shape[1:]))),
           lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))
Identity = _shape_kept, lambda params, inputs, **kwargs: inputs
FanInSum = _no_params(lambda shapes: shapes[0]), lambda params, inputs, **kwargs: sum(inputs)


def FanOut(num):
    """`num` copies of the input, as a list (for `parallel`)."""
    return (_no_params(lambda shape: [shape] * num),
            lambda params, inputs, **kwargs: [inputs] * num)


def FanInConcat(axis=-1):
    """The inputs (a list) concatenated along `axis`."""
    def output_shape(shapes):
        ax = axis % len(shapes[0])
        return shapes[0][:ax] + (sum(s[ax] for s in shapes),) + shapes[0][ax + 1:]

    return (_no_params(output_shape),
            lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis))


def Dropout(rate, mode="train"):
    """Keeps each input with probability `rate` (scaled by 1/rate) in 'train' mode;
    the identity otherwise. Applying it needs `rng=`."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument: apply_fun(params, inputs, rng=key)")
        if mode != "train":
            return inputs
        return jnp.where(random.bernoulli(rng, rate, inputs.shape), inputs / rate, 0)

    return _shape_kept, apply_fun


def _keys(rng, n):
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """The layers one after another."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_key = random.split(rng)
            input_shape, layer_params = init(layer_key, input_shape)
            params.append(layer_params)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        keys = _keys(kwargs.pop("rng", None), len(apply_funs))
        for apply, layer_params, key in zip(apply_funs, params, keys):
            inputs = apply(layer_params, inputs, rng=key, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Layer i applied to input i of a list (use with `FanOut` and `FanIn*`)."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shapes):
        results = [init(key, shape) for init, key, shape
                   in zip(init_funs, random.split(rng, len(init_funs)), input_shapes)]
        return tuple(s for s, _ in results), tuple(p for _, p in results)

    def apply_fun(params, inputs, **kwargs):
        keys = _keys(kwargs.pop("rng", None), len(apply_funs))
        return [apply(p, x, rng=key, **kwargs)
                for apply, p, x, key in zip(apply_funs, params, inputs, keys)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """The layer `make_layer(input_shape)` gives, made anew for each shape."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
