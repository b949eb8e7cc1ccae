"""`plax.ds`: slices with a traced start, in indexing, `x.at[...]` and `Ref` indexing."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import assert_same_as_jax, requires_jax

X = np.arange(10, dtype=np.float32)
Y = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_ds_mirrors_slice():
    assert plax.ds(None) == slice(None)
    s = plax.ds(3)
    assert (s.start, s.size, s.stride) == (0, 3, 1)
    s = plax.ds(2, 3, 2)
    assert (s.start, s.size, s.stride) == (2, 3, 2)


def test_static_and_traced_starts_read_the_same_window():
    np.testing.assert_array_equal(jnp.asarray(X)[plax.ds(4, 2)], X[4:6])
    f = plax.jit(lambda x, i: x[plax.ds(i, 3)])
    np.testing.assert_array_equal(f(X, 2), X[2:5])
    np.testing.assert_array_equal(f(X, 8), X[7:10])  # shifted back into bounds
    np.testing.assert_array_equal(jnp.asarray(Y)[1, plax.ds(1, 2)], Y[1, 1:3])


def test_ds_under_grad_vmap_and_as_a_jit_argument():
    g = plax.grad(lambda x, i: x[plax.ds(i, 2)].sum())(jnp.asarray(X), 3)
    np.testing.assert_array_equal(g, np.isin(np.arange(10), [3, 4]).astype(np.float32))
    out = plax.vmap(lambda x, i: x[plax.ds(i, 3)])(np.stack([X, X]), np.array([1, 2]))
    np.testing.assert_array_equal(out, np.stack([X[1:4], X[2:5]]))
    # a Slice is a pytree whose traced start crosses jit as an argument
    take = plax.jit(lambda x, s: x[s])
    np.testing.assert_array_equal(take(X, plax.ds(np.int32(5), 2)), X[5:7])
    leaves, _ = plax.tree_util.tree_flatten(plax.ds(1, 2))
    assert leaves == []


def test_ref_indexing_takes_ds():
    def f(x, i):
        r = plax.new_ref(x)
        r[plax.ds(i, 2)] = jnp.zeros(2)
        return r[plax.ds(1, 3)], plax.freeze(r)
    for fn in (f, plax.jit(f)):
        window, whole = fn(jnp.asarray(X[:6]), 3)
        np.testing.assert_array_equal(window, [1., 2., 0.])
        np.testing.assert_array_equal(whole, [0., 1., 2., 0., 0., 5.])


@pytest.mark.parametrize("make, error, match", [
    (lambda: plax.ds(1, 2, -1), ValueError, "stride"),
    (lambda: plax.ds(1, 2, np.float32(1.0)), ValueError, "Non-static stride"),
    (lambda: plax.ds(1, 2.0), TypeError, "size must be an integer"),
    (lambda: plax.ds(1, -2), ValueError, "size must be >= 0"),
    (lambda: jnp.asarray(X)[plax.ds(1.5, 2)], TypeError, "integer scalar.*f32"),
    (lambda: jnp.asarray(X)[plax.ds(jnp.array([1, 2]), 2)], TypeError,
     "integer scalar.*i32\\[2\\]"),
    (lambda: jnp.asarray(X)[plax.ds(0, 11)], TypeError, "size 11.*size 10"),
    (lambda: jnp.asarray(X)[0, plax.ds(0, 1)], IndexError, "too many indices"),
    (lambda: plax.jit(lambda x, n: x[plax.ds(0, n)])(X, 2), TypeError,
     "traced size cannot index an array"),
])
def test_bad_ds_is_a_clear_error(make, error, match):
    with pytest.raises(error, match=match):
        make()


@requires_jax
def test_ds_indexing_and_updates_as_jax():
    body = """
x, y = jnp.asarray(inputs["x"]), jnp.asarray(inputs["y"])
ds = lib.ds
cases = {
    "static": x[ds(4, 2)], "past_end": x[ds(8, 3)], "negative": x[ds(-3, 2)],
    "far_negative": x[ds(-12, 3)], "strided": x[ds(1, 3, 3)], "strided_past_end": x[ds(8, 3, 2)],
    "strided_negative": x[ds(-1, 3, 2)], "empty": x[ds(2, 0)], "stride0": x[ds(2, 3, 0)],
    "with_arrays": y[jnp.array([1, 0]), ds(1, 2), jnp.array([0, 3])],
    "arrays_apart": y[jnp.array([1, 0]), :, ds(1, 2, 2)],
    "arrays_after": y[:, ds(1, 2, 2), jnp.array([0, 3])],
    "mixed": y[ds(1, 1), 0, ds(2, 2)], "newaxis": y[ds(1, 2), None], "ellipsis": y[..., ds(1, 2)],
    "scalar_mask": y[True, ds(1, 2)], "three": y[ds(0, 2), ds(1, 2), ds(0, 4, 2)],
    "jit_strided": lib.jit(lambda i: x[ds(i, 3, 2)])(7),
    "set": x.at[ds(2, 2)].set(0.), "set_strided": x.at[ds(1, 3, 2)].set(-1.),
    "set_past_end": x.at[ds(8, 3)].set(-1.), "set_strided_past_end": x.at[ds(8, 3, 2)].set(-1.),
    "set_negative": x.at[ds(-3, 2)].set(-1.), "set_clip": x.at[ds(8, 3)].set(-1., mode="clip"),
    "add_past_end": x.at[ds(8, 3)].add(1.), "set_values": x.at[ds(1, 3)].set(x[:3] + 7),
    "get_fill_negative": x.at[ds(-3, 2)].get(mode="fill"),
    "get_fill_past_end": x.at[ds(8, 3)].get(mode="fill"),
    "get_fill_strided": x.at[ds(8, 3, 2)].get(mode="fill"),
    "jit_set_inside": lib.jit(lambda x, i: x.at[ds(i, 3)].set(-1.))(x, 7),
    "jit_set_outside": lib.jit(lambda x, i: x.at[ds(i, 3)].set(-1.))(x, 8),
    "jit_fill_outside": lib.jit(lambda x, i: x.at[ds(i, 3)].get(mode="fill"))(x, -1),
    "grad": lib.grad(lambda x: (x[ds(2, 3, 2)] ** 2).sum())(x),
}
results.update(cases)
"""
    assert_same_as_jax(body, {"x": X, "y": Y})
