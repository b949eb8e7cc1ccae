"""plax.example_libraries (optimizers, stax) against JAX's: the same programs run by
both (one JAX subprocess), with the same keys, give the same parameters and outputs."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.example_libraries import optimizers, stax

requires_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                  reason="JAX is not installed")

# name -> an optimizer's source over `optimizers` and `jnp`
OPTIMIZERS = {
    "sgd": "optimizers.sgd(0.1)",
    "sgd_exponential_decay": "optimizers.sgd(optimizers.exponential_decay(0.1, 2, 0.5))",
    "momentum_inverse_time": "optimizers.momentum("
                             "optimizers.inverse_time_decay(0.1, 2, 0.5, staircase=True), 0.9)",
    "nesterov_polynomial": "optimizers.nesterov("
                           "optimizers.polynomial_decay(0.1, 3, 0.01, power=2.0), 0.8)",
    "adagrad_piecewise": "optimizers.adagrad("
                         "optimizers.piecewise_constant([1, 3], [0.1, 0.05, 0.01]))",
    "rmsprop": "optimizers.rmsprop(0.01)",
    "rmsprop_momentum": "optimizers.rmsprop_momentum(0.01, momentum=0.5)",
    "adam": "optimizers.adam(0.05)",
    "adamax": "optimizers.adamax(0.05)",
    "sm3": "optimizers.sm3(0.1)",
}

# name -> a stax model's source over `stax`, and its input shape
MODELS = {
    "convnet": ("stax.serial(stax.Conv(4, (3, 3), padding='SAME'), stax.BatchNorm(), "
                "stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)), "
                "stax.AvgPool((2, 2), padding='SAME'), stax.Flatten, stax.Dense(5), "
                "stax.LogSoftmax)", (2, 8, 8, 3)),
    "residual": ("stax.serial(stax.Dense(6), stax.FanOut(2), "
                 "stax.parallel(stax.serial(stax.Dense(6), stax.Gelu), stax.Identity), "
                 "stax.FanInSum, stax.FanOut(2), stax.parallel(stax.Tanh, stax.Selu), "
                 "stax.FanInConcat(), stax.Dense(3), stax.Softmax)", (4, 5)),
    "transposed_and_pooled_nchw": (
        "stax.serial(stax.ConvTranspose(2, (2, 2), strides=(2, 2)), stax.Elu, "
        "stax.GeneralConv(('NHWC', 'OIHW', 'NCHW'), 3, (3, 3)), "
        "stax.SumPool((2, 2), spec='NCHW'), stax.AvgPool((3, 3), padding='SAME', "
        "spec='NCHW'), stax.BatchNorm(axis=(0, 2, 3), center=False), stax.Flatten, "
        "stax.Dense(2), stax.LeakyRelu)", (1, 4, 4, 2)),
    "dropout": ("stax.serial(stax.Dense(8), stax.Dropout(0.7), stax.Sigmoid, "
                "stax.Dropout(0.5, mode='test'), stax.Softplus)", (3, 4)),
}

# What both libraries run: each optimizer for 5 steps on a small least-squares loss,
# and each model initialized and applied with fixed keys.
_PROGRAM = """
def loss(params):
    return ((params["w"] @ jnp.array([1.0, -2.0]) - jnp.arange(3.0)) ** 2).sum() \\
        + params["b"] ** 2 + (params["w"] * params["b"]).sum()

def run_optimizer(source):
    init, update, get_params = eval(source)
    state = init({"w": jnp.ones((3, 2)) * 0.5, "b": jnp.array(1.5)})
    for i in range(5):
        state = update(i, grad(loss)(get_params(state)), state)
    params = get_params(state)
    return [np.asarray(params["w"]).tolist(), float(params["b"])]

def run_model(source, shape):
    init, apply = eval(source)
    out_shape, params = init(random.key(0), shape)
    x = random.normal(random.key(1), shape)
    out = apply(params, x, rng=random.key(2))
    return [[int(d) for d in out_shape], np.asarray(out).tolist(),
            [np.asarray(p).tolist() for p in tree_leaves(params)]]
"""

_JAX_RESULTS = """
    import json, sys
    import numpy as np
    import jax.numpy as jnp
    from jax import grad, random
    from jax.tree_util import tree_leaves
    from jax.example_libraries import optimizers, stax
    exec(sys.argv[1])
    opts, models = json.loads(sys.argv[2]), json.loads(sys.argv[3])
    print(json.dumps({"optimizers": {k: run_optimizer(v) for k, v in opts.items()},
                      "models": {k: run_model(src, tuple(shape))
                                 for k, (src, shape) in models.items()}}))
"""


def _plax_scope():
    scope = {"np": np, "jnp": jnp, "grad": plax.grad, "random": plax.random,
             "tree_leaves": plax.tree_util.tree_leaves, "optimizers": optimizers,
             "stax": stax}
    exec(_PROGRAM, scope)
    return scope


@pytest.fixture(scope="module")
def jax_results():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_RESULTS), _PROGRAM,
                           json.dumps(OPTIMIZERS), json.dumps(MODELS)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@requires_jax
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_are_jaxs(jax_results, name):
    w, b = _plax_scope()["run_optimizer"](OPTIMIZERS[name])
    want_w, want_b = jax_results["optimizers"][name]
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-5, atol=1e-6)


@requires_jax
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_params_and_outputs_are_jaxs(jax_results, name):
    source, shape = MODELS[name]
    out_shape, out, params = _plax_scope()["run_model"](source, shape)
    want_shape, want_out, want_params = jax_results["models"][name]
    assert out_shape == want_shape and len(params) == len(want_params)
    for got, want in zip(params, want_params):  # the keys' draws are JAX's bits
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out, want_out, rtol=2e-5, atol=1e-6)


def test_optimizer_state_is_a_pytree_that_jit_and_packing_keep():
    init, update, get_params = optimizers.adam(0.1)
    state = init({"w": jnp.ones(3), "b": jnp.zeros(())})
    step = plax.jit(update)
    state = step(0, {"w": jnp.ones(3), "b": jnp.array(2.0)}, state)
    repacked = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert plax.tree.structure(repacked) == plax.tree.structure(state)
    np.testing.assert_allclose(get_params(repacked)["w"], get_params(state)["w"])
    with pytest.raises(TypeError, match="gradient tree that did not match the parameter tree"):
        update(1, {"w": jnp.ones(3)}, state)
    with pytest.raises(TypeError, match="every leaf must be a JoinPoint"):
        optimizers.pack_optimizer_state({"w": 1.0})


def test_schedules_and_utilities():
    assert float(optimizers.piecewise_constant([2], [1.0, 0.5])(3)) == 0.5
    with pytest.raises(ValueError, match="one shorter than values"):
        optimizers.piecewise_constant([1, 2], [1.0, 0.5])
    with pytest.raises(TypeError, match="a step size must be a scalar or a schedule"):
        optimizers.make_schedule(jnp.array([0.1, 0.2]))
    grads = {"a": jnp.array([3.0, 4.0])}
    assert float(optimizers.l2_norm(grads)) == 5.0
    np.testing.assert_allclose(optimizers.clip_grads(grads, 1.0)["a"], [0.6, 0.8])


def test_dropout_needs_a_key():
    _, apply = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply((), jnp.ones(3))
