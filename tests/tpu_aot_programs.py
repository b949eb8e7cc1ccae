"""Programs compiled ahead of time for a TPU v5e:2x2 topology by plax and by JAX
(tests/test_tpu_aot.py compares their optimized TPU HLO).

Each program is written once against a module `jax` that is either `plax` or JAX's own,
so both libraries compile the same source; `build(jax, name)` returns the compiled
program. Shapes are small (compiles stay well under a second each) but TPU-friendly
(multiples of (8, 128)), so the layouts and fusions are the ones real programs get.
"""
from __future__ import annotations

import collections
import importlib
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "benchmarks", "tpu"))
from bench_on_chip import transformer_block  # noqa: E402

TOPOLOGY = "v5e:2x2"


class Env:
    """What a program needs of one library: its modules, the topology's devices, and
    ShapeDtypeStructs placed on one chip or split over the four."""

    def __init__(self, jax):
        self.jax = jax
        self.jnp = jax.numpy
        self.lax = jax.lax
        self.random = importlib.import_module(jax.__name__ + ".random")
        self.sharding = importlib.import_module(jax.__name__ + ".sharding")
        topologies = importlib.import_module(jax.__name__ + ".experimental.topologies")
        self.topology = topologies.get_topology_desc(topology_name=TOPOLOGY, platform="tpu")
        self.mesh = topologies.make_mesh(self.topology, (4,), ("x",))
        self.mesh2 = topologies.make_mesh(self.topology, (2, 2), ("data", "model"))
        self.chip = self.sharding.SingleDeviceSharding(self.topology.devices[0])

    def arg(self, shape, dtype=np.float32, spec=None, mesh=None):
        """A ShapeDtypeStruct on chip 0, or split over a mesh by `spec`."""
        sharding = self.chip if spec is None else self.sharding.NamedSharding(
            mesh or self.mesh, self.sharding.PartitionSpec(*spec))
        return self.jax.ShapeDtypeStruct(shape, np.dtype(dtype), sharding=sharding)


def mlp_step(e):
    jax, jnp = e.jax, e.jnp

    def step(params, x, y):
        def loss(p):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)
        grads = jax.grad(loss)(params)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    params = {"w1": e.arg((128, 256)), "b1": e.arg((256,)), "w2": e.arg((256, 128)),
              "b2": e.arg((128,))}
    return jax.jit(step), (params, e.arg((64, 128)), e.arg((64, 128)))


def transformer_block_step(e):
    jax, jnp = e.jax, e.jnp
    heads, d = 4, 128

    def block(p, x):  # the block benchmarks/tpu/bench_on_chip.py runs on the chip
        return transformer_block(jax, jnp, p, x, heads)

    def step(p, x):
        loss = lambda p: jnp.mean(block(p, x).astype(jnp.float32) ** 2)
        grads = jax.grad(loss)(p)
        return jax.tree.map(lambda w, g: w - (0.01 * g).astype(w.dtype), p, grads)
    bf16 = jnp.bfloat16
    p = {w: e.arg((d, heads, d // heads), bf16) for w in ("wq", "wk", "wv")}
    p.update(wo=e.arg((d, d), bf16), w1=e.arg((d, 4 * d), bf16), w2=e.arg((4 * d, d), bf16))
    return jax.jit(step), (p, e.arg((2, 128, d), bf16))


def conv_net_step(e):
    jax, jnp, lax = e.jax, e.jnp, e.lax

    def step(p, x, labels):
        def loss(p):
            h = lax.conv_general_dilated(x, p["k1"], (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
            h = jax.nn.relu(h)
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            logits = h.reshape(h.shape[0], -1) @ p["w"]
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * labels, -1))
        grads = jax.grad(loss)(p)
        return jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)
    p = {"k1": e.arg((3, 3, 8, 128)), "w": e.arg((8 * 8 * 128, 128))}
    return jax.jit(step), (p, e.arg((8, 16, 16, 8)), e.arg((8, 128)))


def scan_rnn(e):
    jax, jnp = e.jax, e.jnp

    def run(w, xs):
        def cell(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        return jax.lax.scan(cell, jnp.zeros((8, 128)), xs)
    return jax.jit(run), (e.arg((128, 128)), e.arg((16, 8, 128)))


def while_newton(e):
    jax, jnp = e.jax, e.jnp

    def sqrt_newton(a):
        def body(state):
            i, x = state
            return i + 1, 0.5 * (x + a / x)
        return jax.lax.while_loop(lambda s: (s[0] < 20) & jnp.any(jnp.abs(s[1] ** 2 - a) > 1e-6),
                                  body, (0, jnp.ones_like(a)))[1]
    return jax.jit(sqrt_newton), (e.arg((8, 128)),)


def sort_top_k(e):
    jax, jnp = e.jax, e.jnp
    return jax.jit(lambda x: (jnp.sort(x, axis=-1), jax.lax.top_k(x, 8),
                              jnp.argsort(x[0]))), (e.arg((8, 1024)),)


def cumulative(e):
    jax, jnp = e.jax, e.jnp
    return jax.jit(lambda x: (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0),
                              jax.lax.cummax(x, axis=1))), (e.arg((8, 512)),)


def gather_scatter(e):
    jax, jnp = e.jax, e.jnp

    def f(table, idx, updates):
        rows = table[idx]
        picked = jnp.take_along_axis(table[:64], idx[:, None] % 128, axis=1)
        return rows * 2, table.at[idx].add(updates), picked
    return jax.jit(f), (e.arg((1024, 128)), e.arg((64,), np.int32), e.arg((64, 128)))


def random_sampling(e):
    jax, random = e.jax, e.random

    def sample(seed):
        key = random.key(seed)
        k1, k2, k3 = random.split(key, 3)
        return (random.normal(k1, (8, 128)), random.uniform(k2, (8, 128)),
                random.bernoulli(k3, 0.3, (8, 128)))
    return jax.jit(sample), (e.arg((), np.uint32),)


def linalg_decompositions(e):
    jax, jnp, lax = e.jax, e.jnp, e.lax

    def f(a, b):
        spd = a @ a.T + 128 * jnp.eye(128)
        chol = jnp.linalg.cholesky(spd)
        q, r = jnp.linalg.qr(a)
        w, v = jnp.linalg.eigh(spd)
        x = lax.linalg.triangular_solve(chol, b, left_side=True, lower=True)
        return chol, q, r, w, v, x, jnp.linalg.svd(a, full_matrices=False)
    return jax.jit(f), (e.arg((128, 128)), e.arg((128, 8)))


def fft(e):
    jax, jnp = e.jax, e.jnp
    return jax.jit(lambda x: (jnp.fft.fft(x), jnp.fft.irfft(jnp.fft.rfft(x)))), (e.arg((8, 256)),)


def data_model_parallel_step(e):
    jax, jnp = e.jax, e.jnp

    def step(w1, w2, x):
        def loss(w1, w2):
            return jnp.mean((jax.nn.relu(x @ w1) @ w2) ** 2)
        g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
        return w1 - 0.1 * g1, w2 - 0.1 * g2
    m = e.mesh2
    return jax.jit(step), (e.arg((256, 512), spec=(None, "model"), mesh=m),
                           e.arg((512, 256), spec=("model", None), mesh=m),
                           e.arg((64, 256), spec=("data", None), mesh=m))


def shard_map_collectives(e):
    jax = e.jax
    P = e.sharding.PartitionSpec

    def body(x):
        total = jax.lax.psum(x.sum(), "x")
        gathered = jax.lax.all_gather(x, "x", tiled=True)
        shifted = jax.lax.ppermute(x, "x", [(i, (i + 1) % 4) for i in range(4)])
        swapped = jax.lax.all_to_all(x.reshape(4, 2, 128), "x", 0, 0, tiled=True)
        return total * shifted + gathered[:8], swapped.reshape(8, 128)
    f = jax.shard_map(body, mesh=e.mesh, in_specs=P("x"), out_specs=(P("x"), P("x")))
    return jax.jit(f), (e.arg((32, 128), spec=("x",)),)


def pmap_allreduce(e):
    jax = e.jax
    f = jax.pmap(lambda x: jax.lax.psum(x * 2.0, "i"), axis_name="i",
                 devices=e.topology.devices)
    return f, (e.jax.ShapeDtypeStruct((4, 8, 128), np.dtype(np.float32)),)


def remat_mlp(e):
    jax, jnp = e.jax, e.jnp

    @jax.checkpoint
    def layer(w, x):
        return jnp.sin(jnp.tanh(x @ w))

    def loss(ws, x):
        for w in ws:
            x = layer(w, x)
        return jnp.sum(x ** 2)
    return jax.jit(jax.grad(loss)), ([e.arg((128, 128)) for _ in range(3)], e.arg((8, 128)))


def donation(e):
    jax = e.jax
    return jax.jit(lambda state, g: (state - 0.1 * g, (state * g).sum()),
                   donate_argnums=0), (e.arg((512, 128)), e.arg((512, 128)))


PROGRAMS = {f.__name__: f for f in (
    mlp_step, transformer_block_step, conv_net_step, scan_rnn, while_newton, sort_top_k,
    cumulative, gather_scatter, random_sampling, linalg_decompositions, fft,
    data_model_parallel_step, shard_map_collectives, pmap_allreduce, remat_mlp, donation)}


def build(jax, name: str, env: Env | None = None):
    """The `Compiled` of program `name` under the library `jax`."""
    fn, args = PROGRAMS[name](env or Env(jax))
    return fn.lower(*args).compile()


# --- comparing optimized HLO ----------------------------------------------------------------

def _strip_braced(text: str, key: str) -> str:
    """`text` without each `key...}` (key ends with its opening brace; braces nest)."""
    out, i = [], 0
    while (j := text.find(key, i)) >= 0:
        out.append(text[i:j])
        k, depth = j + len(key), 1
        while depth:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        i = k
    out.append(text[i:])
    return "".join(out)


def normalize(hlo: str) -> str:
    """The computations of an optimized HLO module with what says nothing about the code
    removed: the module header and the stack-frame tables, `metadata` and
    `frontend_attributes` (source lines, op names), the `sharding={replicated}` that JAX
    states on the parameters of a one-device program, and names (renamed in order of
    appearance)."""
    lines = hlo.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("%", "ENTRY")))
    text = "\n".join(lines[start:])
    for key in (", metadata={", ", frontend_attributes={"):
        text = _strip_braced(text, key)
    text = text.replace(", sharding={replicated}", "")
    names: dict[str, str] = {}
    text = re.sub(r"%([\w.\-]+)", lambda m: "%" + names.setdefault(m.group(1), f"v{len(names)}"),
                  text)
    return re.sub(r"([(,] ?)[\w.\-]+: ", r"\1p: ", text)  # computations' parameter names


def instruction_counts(hlo: str) -> collections.Counter:
    """How many instructions of each opcode the module has."""
    return collections.Counter(re.findall(r"^\s*(?:ROOT )?%\S+ = .*? ([a-z][\w-]*)\(",
                                          normalize(hlo), re.M))
