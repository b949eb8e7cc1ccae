"""`plax.example_libraries.optimizers`: JAX's small library of first-order optimizers.

An optimizer is a triple of pure functions over a pytree of parameters:
`init_fn(params) -> state`, `update_fn(step, grads, state) -> state` and
`params_fn(state) -> params`. Each optimizer below is written for one array and
lifted to pytrees by `optimizer`; its state is an `OptimizerState` pytree, so it
passes through `jit` and can be saved with `unpack_optimizer_state`.

A step size is a number or a schedule, a function of the step number.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

from plax.extend import tree_util
from plax_stdlib import numpy as jnp

__all__ = [
    "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule",
    "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax", "clip_grads",
    "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule",
    "momentum", "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant",
    "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]

Array = Any
Params = Any   # a pytree of arrays
State = Any    # one array's optimizer state (a pytree)
Updates = Any  # gradients: a pytree like the parameters
Step = int
Schedule = Callable[[Step], float]


class OptimizerState(NamedTuple):
    """The states of all parameters, flattened: `packed_state[i]` holds the leaves of
    parameter i's state, whose structure is `subtree_defs[i]`; `tree_def` is the
    parameters' structure. As a pytree its leaves are the states' arrays."""
    packed_state: list
    tree_def: Any
    subtree_defs: tuple


tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux))

InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _unpacked(opt_state: OptimizerState) -> list:
    """Each parameter's state, rebuilt from its leaves."""
    return [tree_util.tree_unflatten(d, leaves)
            for d, leaves in zip(opt_state.subtree_defs, opt_state.packed_state)]


def _packed(states: list, tree_def) -> OptimizerState:
    flat = [tree_util.tree_flatten(s) for s in states]
    return OptimizerState([leaves for leaves, _ in flat], tree_def,
                          tuple(d for _, d in flat))


def optimizer(opt_maker: Callable[..., tuple]) -> Callable[..., Optimizer]:
    """Lifts a maker of `(init, update, get_params)` for one array to an `Optimizer` of
    pytrees: the returned function takes the maker's arguments."""

    @functools.wraps(opt_maker)
    def make(*args, **kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def init_fn(params):
            leaves, tree_def = tree_util.tree_flatten(params)
            return _packed([init(x) for x in leaves], tree_def)

        @functools.wraps(update)
        def update_fn(step, grads, opt_state):
            grad_leaves, grad_def = tree_util.tree_flatten(grads)
            if grad_def != opt_state.tree_def:
                raise TypeError(f"optimizer update function was passed a gradient tree "
                                f"that did not match the parameter tree structure with "
                                f"which it was initialized: parameter tree "
                                f"{opt_state.tree_def} and grad tree {grad_def}.")
            new = _packed([update(step, g, s) for g, s in
                           zip(grad_leaves, _unpacked(opt_state))], opt_state.tree_def)
            for before, after in zip(opt_state.subtree_defs, new.subtree_defs):
                if before != after:
                    raise TypeError(f"optimizer update function produced an output "
                                    f"structure that did not match its input structure: "
                                    f"input {before} and output {after}.")
            return new

        @functools.wraps(get_params)
        def params_fn(opt_state):
            return tree_util.tree_unflatten(
                opt_state.tree_def, [get_params(s) for s in _unpacked(opt_state)])

        return Optimizer(init_fn, update_fn, params_fn)

    return make


# --- step-size schedules ------------------------------------------------------------

def constant(step_size) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From `step_size` to `final_step_size` over `decay_steps` steps, then constant."""
    def schedule(i):
        remaining = 1 - jnp.minimum(i, decay_steps) / decay_steps
        return remaining ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """`values[k]` for steps past `k` of the `boundaries` (one fewer than values)."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if boundaries.ndim != 1 or values.ndim != 1:
        raise ValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"a step size must be a scalar or a schedule (a function of the step), "
                    f"got {type(scalar_or_schedule).__name__}")


# --- optimizers ----------------------------------------------------------------------

def _first(state):
    return state[0]


def _and_zeros(count: int):
    """An `init` keeping the parameter and `count` zero arrays like it."""
    return lambda x: (x, *(jnp.zeros_like(x) for _ in range(count)))


@optimizer
def sgd(step_size):
    """Stochastic gradient descent."""
    lr = make_schedule(step_size)
    return (lambda x: x), (lambda i, g, x: x - lr(i) * g), (lambda x: x)


def _with_velocity(step_size, mass: float, look_ahead: bool):
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - lr(i) * (mass * velocity + g if look_ahead else velocity), velocity

    return _and_zeros(1), update, _first


@optimizer
def momentum(step_size: Schedule, mass: float):
    """Gradient descent with (heavy-ball) momentum."""
    return _with_velocity(step_size, mass, look_ahead=False)


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """Gradient descent with Nesterov's momentum."""
    return _with_velocity(step_size, mass, look_ahead=True)


def _inverse_sqrt(accumulated):
    """1/sqrt of a sum of squares, 0 where nothing was accumulated yet."""
    return jnp.where(accumulated > 0, 1. / jnp.sqrt(accumulated), 0.0)


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al., 2011) with momentum on the scaled gradient."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, squares, m = state
        squares = squares + jnp.square(g)
        m = (1. - momentum) * (g * _inverse_sqrt(squares)) + momentum * m
        return x - lr(i) * m, squares, m

    return _and_zeros(2), update, _first


def _mean_square(previous, g, gamma):
    return previous * gamma + jnp.square(g) * (1. - gamma)


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: steps scaled by a running root mean square of the gradients."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, mean_square = state
        mean_square = _mean_square(mean_square, g, gamma)
        return x - lr(i) * g / jnp.sqrt(mean_square + eps), mean_square

    return _and_zeros(1), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp whose scaled steps accumulate with momentum."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, mean_square, velocity = state
        mean_square = _mean_square(mean_square, g, gamma)
        velocity = momentum * velocity + lr(i) * g / jnp.sqrt(mean_square + eps)
        return x - velocity, mean_square, velocity

    return _and_zeros(2), update, _first


def _bias_correction(beta, i, dtype):
    return 1 - jnp.asarray(beta, dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015)."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / _bias_correction(b1, i, m.dtype)
        v_hat = v / _bias_correction(b2, i, m.dtype)
        return x - lr(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    return _and_zeros(2), update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with an exponentially weighted infinity norm."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (lr(i) / _bias_correction(b1, i, m.dtype)) * m / (u + eps), m, u

    return _and_zeros(2), update, _first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): one accumulator per index of each axis, whose minimum
    over the axes bounds the element's sum of squared gradients (a scalar keeps one)."""
    lr = make_schedule(step_size)

    def init(x):
        return x, jnp.zeros_like(x), ([jnp.zeros(n, x.dtype) for n in x.shape]
                                      or [jnp.zeros((), x.dtype)])

    def update(i, g, state):
        x, m, accumulators = state
        if g.ndim == 0:
            sums = accumulators[0] + jnp.square(g)
            accumulators = [sums]
        else:
            others = [tuple(d for d in range(g.ndim) if d != axis) for axis in range(g.ndim)]
            bound = functools.reduce(jnp.minimum, [jnp.expand_dims(a, axes) for a, axes
                                                   in zip(accumulators, others)])
            sums = bound + jnp.square(g)
            accumulators = [sums.max(axis=axes) for axes in others]
        m = (1. - momentum) * (g * _inverse_sqrt(sums)) + momentum * m
        return x - lr(i) * m, m, accumulators

    return init, update, _first


# --- utilities -----------------------------------------------------------------------

def l2_norm(tree) -> Array:
    """The Euclidean norm of all the leaves of `tree` together."""
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_util.tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """`grad_tree` scaled down to norm `max_norm` where its norm exceeds it."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                              grad_tree)


class JoinPoint:
    """A leaf of an unpacked optimizer state: one parameter's state pytree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):  # looks like a container, as pytree leaves holding data do
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState):
    """The state as a pytree shaped like the parameters, whose leaves are `JoinPoint`s
    holding each parameter's state (what one serializes)."""
    return tree_util.tree_unflatten(opt_state.tree_def,
                                    [JoinPoint(s) for s in _unpacked(opt_state)])


def pack_optimizer_state(marked_pytree) -> OptimizerState:
    """The inverse of `unpack_optimizer_state`."""
    points, tree_def = tree_util.tree_flatten(marked_pytree)
    if not all(isinstance(p, JoinPoint) for p in points):
        raise TypeError("pack_optimizer_state takes the pytree unpack_optimizer_state "
                        "made: every leaf must be a JoinPoint")
    return _packed([p.subtree for p in points], tree_def)
