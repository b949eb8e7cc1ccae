"""Derivatives of order-dependent primitives where the easy formulas fail: products at
zeros of the operand (no division by factors), running extrema, and sorting."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.test_util import check_grads

WITH_ZEROS = np.array([[1.5, 0.0, -2.0, 3.0],
                       [0.5, 2.0, 0.0, 1.0],
                       [1.0, 2.0, 3.0, -1.0]], np.float32)
# Running extrema are not differentiable at ties: distinct values only.
DISTINCT = np.array([[1.5, 0.25, -2.0, 3.0],
                     [0.5, 2.1, 0.75, 1.0],
                     [1.1, 2.4, 3.5, -1.25]], np.float32)


@pytest.mark.parametrize("f, x", [
    (lambda v: lax.reduce_prod(v, (1,)), WITH_ZEROS),
    (lambda v: lax.reduce_prod(v, (0, 1)), WITH_ZEROS),
    (lambda v: lax.cumprod(v, 1), WITH_ZEROS),
    (lambda v: lax.cumprod(v, 0, reverse=True), WITH_ZEROS),
    (lambda v: lax.cummax(v, 1), DISTINCT),
    (lambda v: lax.cummin(v, 0, reverse=True), DISTINCT),
], ids=["prod_rows", "prod_all", "cumprod", "cumprod_reverse", "cummax", "cummin_reverse"])
def test_orders_one_and_two_against_finite_differences(f, x):
    check_grads(f, (x,), 2, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def test_gradient_of_a_product_with_zero_factors_is_exact():
    # d/dv prod(v) = prod of the other factors: [0*3, 2*3, 2*0].
    np.testing.assert_array_equal(plax.grad(jnp.prod)(np.array([2.0, 0.0, 3.0], np.float32)),
                                  [0.0, 6.0, 0.0])
    np.testing.assert_array_equal(plax.grad(jnp.prod)(np.array([2.0, 0.0, 0.0], np.float32)),
                                  [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(
        plax.grad(lambda v: lax.cumprod(v).sum())(np.array([2.0, 0.0, 3.0], np.float32)),
        [1.0, 1.0 * 2 + 3.0 * 2, 0.0])


def test_running_maximum_routes_tangents_to_the_running_argmax():
    x = np.array([1.0, 3.0, 2.0, 5.0], np.float32)
    # Each output follows the element holding the maximum so far.
    jac = plax.jacfwd(lambda v: lax.cummax(v))(x)
    np.testing.assert_array_equal(jac, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]])


def test_empty_reductions_have_zero_tangents():
    jac = plax.jacfwd(lambda v: lax.reduce_prod(v, (1,)))(np.ones((2, 0), np.float32))
    assert jac.shape == (2, 2, 0)


@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_routes_tangents_through_the_permutation(dimension):
    check_grads(lambda v: lax.sort(v, dimension), (DISTINCT,), 2, modes=("fwd", "rev"),
                atol=1e-2, rtol=1e-2)
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    check_grads(lambda k, v: lax.sort_key_val(k, v, dimension), (DISTINCT, values), 2,
                modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def test_gradient_of_the_largest_element_lands_on_it():
    grad = plax.grad(lambda v: jnp.sort(v)[-1])(np.array([0.5, 3.0, -1.0], np.float32))
    np.testing.assert_array_equal(grad, [0.0, 1.0, 0.0])
