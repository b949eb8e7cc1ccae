"""plax's main job: train a small neural network, then check a jitted solver against NumPy.

1. A two-layer MLP learns a smooth function of two variables from synthetic data by
   plain gradient descent: `plax.jit(plax.value_and_grad(loss))` gives the loss and
   its gradient in one compiled call, and a jitted SGD step updates the parameters.
   The loss curve is printed as text; the final loss is recomputed with NumPy.
2. Power iteration, compiled with `plax.jit`, finds the dominant eigenvalue of a
   symmetric matrix; NumPy's value is printed beside it.
"""
import time

import numpy as np

import plax
import plax.numpy as jnp

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


def train(rng) -> None:
    x = rng.uniform(-1, 1, (256, 2)).astype(np.float32)
    y = target(x).astype(np.float32)
    params = init_params(rng)
    t0 = time.perf_counter()
    curve = []
    for step in range(STEPS + 1):
        value, grads = loss_and_grad(params, x, y)
        if step % REPORT_EVERY == 0:
            curve.append((step, float(value)))
        if step < STEPS:
            params = sgd(params, grads)
    elapsed = time.perf_counter() - t0
    print(f"training a 2-32-32-1 MLP on {len(x)} points, SGD lr={LEARNING_RATE}:")
    first = curve[0][1]
    for step, value in curve:
        bar = "#" * max(1, round(40 * value / first))
        print(f"  step {step:4d}  loss {value:.5f}  {bar}")
    reference = numpy_loss(params, x, y)
    print(f"final loss: plax {float(loss(params, x, y)):.6f}   numpy {reference:.6f}   "
          f"({STEPS} steps in {elapsed:.2f} s, compile included)")
    if not curve[-1][1] < first / 5 or not np.isclose(float(loss(params, x, y)), reference,
                                                      rtol=1e-3):
        raise SystemExit("training did not reduce the loss, or plax disagrees with numpy")


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
