"""A flax nnx MLP trained with optax, under `jit` and under `shard_map` over the 8
CPU devices (data parallel: the loss averaged with `pmean`); prints the losses.
Run it with JAX and through the alias and compare:

    python3 tests/ecosystem/nnx_train.py > jax.txt
    PLAX_AS_JAX=1 python3 tests/ecosystem/nnx_train.py > plax.txt

(in the ecosystem venv, `.eco-cache/venv/bin/python`, which has flax and optax).
"""
from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import flax.nnx as nnx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(4, 16, rngs=rngs)
        self.l2 = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(jax.nn.tanh(self.l1(x)))


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)
    return jnp.asarray(x), jnp.asarray(y)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def train_jit(steps=20):
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return loss

    x, y = data()
    return [float(step(model, optimizer, x, y)) for _ in range(steps)]


def train_shard_map(steps=20):
    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    model = MLP(nnx.Rngs(0))
    params = nnx.state(model, nnx.Param)
    graphdef = nnx.graphdef(model)
    tx = optax.sgd(5e-2)
    opt_state = tx.init(params)

    def local_loss(params, x, y):  # each device's batch; the mean over devices
        return jax.lax.pmean(loss_fn(nnx.merge(graphdef, params), x, y), "data")

    sharded_loss = jax.shard_map(local_loss, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                                 out_specs=P())

    @jax.jit
    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(sharded_loss)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    x, y = data()
    losses = []
    for _ in range(steps):
        params, opt_state, value = step(params, opt_state, x, y)
        losses.append(float(value))
    return losses


if __name__ == "__main__":
    print("jit", " ".join(f"{v:.6f}" for v in train_jit()))
    print("shard_map", " ".join(f"{v:.6f}" for v in train_shard_map()))
