"""plax's main job: train a small neural network sharded over 8 devices, then check a
jitted solver against NumPy.

1. The example makes 8 CPU devices for itself and arranges them in a 4 x 2 mesh
   (`data`, `model`). A two-layer MLP learns a smooth function of two variables by
   plain gradient descent, data-parallel over `data` (each device row holds a
   quarter of the batch) with its hidden layer model-parallel over `model` (each
   device column holds half of the hidden units). `plax.jit(plax.value_and_grad(
   loss))` gives the loss and gradient in one SPMD program over the 8 devices, and a
   jitted SGD step keeps every parameter in its layout. The layouts are drawn, the
   loss curve is printed, and the final loss is recomputed with NumPy.
2. Power iteration, compiled with `plax.jit`, finds the dominant eigenvalue of a
   symmetric matrix; NumPy's value is printed beside it.
"""
import time

import numpy as np

import plax

# Eight CPU devices, decided before the backend starts (no XLA_FLAGS to remember).
plax.config.update("jax_num_cpu_devices", 8)

import plax.numpy as jnp  # noqa: E402
from plax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

STEPS, LEARNING_RATE, REPORT_EVERY = 600, 0.1, 75


def target(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x[:, :1]) * np.cos(2 * x[:, 1:])


def init_params(rng, sizes=(2, 32, 32, 1)):
    return [(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m),
             np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


loss_and_grad = plax.jit(plax.value_and_grad(loss))


@plax.jit
def sgd(params, grads):
    return plax.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def numpy_loss(params, x, y) -> float:
    h = x.astype(np.float64)
    for w, b in params[:-1]:
        h = np.tanh(h @ np.asarray(w, np.float64) + np.asarray(b, np.float64))
    w, b = params[-1]
    out = h @ np.asarray(w, np.float64) + np.asarray(b, np.float64)
    return float(np.mean((out - y) ** 2))


def shard_params(params, mesh):
    """The first layer's weights split by columns over `model`, the second's by rows
    (so the hidden layer is model-parallel); the rest replicated."""
    specs = [(P(None, "model"), P("model")), (P("model", None), P()), (P(), P())]
    shardings = [tuple(NamedSharding(mesh, s) for s in layer) for layer in specs]
    return plax.device_put(params, shardings), shardings


def train(rng) -> None:
    # Auto axes: the partitioner picks the layouts between the ones given here (the
    # default, Explicit, would ask for the `out_sharding` of the second layer's
    # contraction over `model`, as JAX does).
    mesh = plax.make_mesh((4, 2), ("data", "model"), axis_types=AxisType.Auto)
    x = rng.uniform(-1, 1, (256, 2)).astype(np.float32)
    y = target(x).astype(np.float32)
    host_params = init_params(rng)
    params, param_shardings = shard_params(host_params, mesh)
    batch = NamedSharding(mesh, P("data", None))  # a quarter of the rows per device row
    x_dev, y_dev = plax.device_put((x, y), batch)
    print(f"mesh {dict(mesh.shape)} over devices {mesh.device_ids.tolist()}")
    print("first-layer weights (2 x 32), split over `model`:")
    plax.debug.visualize_array_sharding(params[0][0])
    print("batch (256 x 2), split over `data`:")
    plax.debug.visualize_array_sharding(x_dev)
    step = plax.jit(sgd, out_shardings=param_shardings)
    t0 = time.perf_counter()
    curve = []
    for i in range(STEPS + 1):
        value, grads = loss_and_grad(params, x_dev, y_dev)
        if i % REPORT_EVERY == 0:
            curve.append((i, float(value)))
        if i < STEPS:
            params = step(params, grads)
    elapsed = time.perf_counter() - t0
    layouts_kept = all(p.sharding == s for p, s in zip(plax.tree_util.tree_leaves(params),
                                                        plax.tree_util.tree_leaves(
                                                            param_shardings)))
    print(f"training a 2-32-32-1 MLP on {len(x)} points over {len(mesh.devices.flat)} "
          f"devices, SGD lr={LEARNING_RATE}:")
    first = curve[0][1]
    for step, value in curve:
        bar = "#" * max(1, round(40 * value / first))
        print(f"  step {step:4d}  loss {value:.5f}  {bar}")
    reference = numpy_loss(params, x, y)
    print(f"final loss: plax {float(loss(params, x, y)):.6f}   numpy {reference:.6f}   "
          f"({STEPS} steps in {elapsed:.2f} s, compile included)")
    print(f"parameters kept their layouts: {layouts_kept}; output of the first layer "
          f"weights: {params[0][0].sharding}")
    if not curve[-1][1] < first / 5 or not np.isclose(float(loss(params, x, y)), reference,
                                                      rtol=1e-3):
        raise SystemExit("training did not reduce the loss, or plax disagrees with numpy")
    if not layouts_kept:
        raise SystemExit("a parameter lost its sharding during training")


@plax.jit
def power_iteration(matrix, vector):
    """Twenty-five steps of power iteration; returns the eigenvalue estimate."""
    for _ in range(25):
        vector = matrix @ vector
        vector = vector / jnp.sqrt(jnp.sum(vector * vector))
    return vector @ (matrix @ vector)


def eigenvalue(rng) -> None:
    q, _ = np.linalg.qr(rng.standard_normal((48, 48)))
    spectrum = np.concatenate([[10.0], rng.uniform(-2.0, 2.0, 47)])
    matrix = ((q * spectrum) @ q.T).astype(np.float32)
    value = float(power_iteration(matrix, rng.standard_normal(48).astype(np.float32)))
    reference = np.linalg.eigvalsh(matrix.astype(np.float64))[-1]
    print(f"dominant eigenvalue: plax {value:.5f}   numpy {reference:.5f}")
    if not np.isclose(value, reference, rtol=1e-4):
        raise SystemExit("plax disagrees with numpy")


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"plax {plax.__version__} on {plax.default_backend()}: {len(plax.devices())} devices")
    train(rng)
    eigenvalue(rng)


if __name__ == "__main__":
    main()
