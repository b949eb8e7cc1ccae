"""Mutable references as `vmap` arguments (batched reads, writes and accumulations at
the reference's batch dimension) and through `jit(f).trace/.lower/.compile` (Ref
inputs in the Jaxpr, a module donating each reference's value to its final value,
a Compiled that updates the references); against NumPy loops and, in a
subprocess, JAX."""
from __future__ import annotations

import re

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
import plax.numpy as jnp
from plax import lax

# --- vmap ----------------------------------------------------------------------------


def test_vmap_accumulates_into_a_batched_reference():
    r = plax.new_ref(jnp.zeros((3, 2)))

    def f(ref, x):
        ref[...] += x
        return x * 2
    out = plax.vmap(f, in_axes=(0, 0))(r, jnp.ones((3, 2)))
    np.testing.assert_array_equal(out, np.full((3, 2), 2.0))
    np.testing.assert_array_equal(r[...], np.ones((3, 2)))


def _swap_then_add(ref, i, v):
    old = plax.ref.swap(ref, i, v)
    plax.ref.addupdate(ref, slice(0, 2), jnp.ones(2))
    return old, ref[1:3]


def _numpy_swap_then_add(rows, i, v):
    """`_swap_then_add` on each row of `rows` (NumPy, in place): (olds, reads)."""
    olds, reads = [], []
    for n, row in enumerate(rows):
        k = i[n] if np.ndim(i) else i
        olds.append(row[k].copy())
        row[k] = v[n] if np.ndim(v) else v
        row[0:2] += 1.0
        reads.append(row[1:3].copy())
    return np.array(olds), np.array(reads)


@pytest.mark.parametrize("ref_axis", [0, 1])
def test_vmap_swap_addupdate_and_reads_with_indices(ref_axis):
    value = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    r = plax.new_ref(jnp.asarray(value))
    if ref_axis == 0:  # one row per example, a batched index, an unbatched value
        i, v, axes = np.array([0, 1, 3]), np.float32(7.0), (0, 0, None)
        rows = value.copy()
    else:  # one column per example, an unbatched index, a batched value
        i, v, axes = 2, np.arange(4.0, dtype=np.float32), (1, None, 0)
        rows = value.T.copy()
    old, read = plax.vmap(_swap_then_add, in_axes=axes)(r, i, v)
    want_old, want_read = _numpy_swap_then_add(rows, i, v)
    np.testing.assert_array_equal(old, want_old)
    np.testing.assert_array_equal(read, want_read)
    np.testing.assert_array_equal(r[...], rows if ref_axis == 0 else rows.T)


def test_nested_vmap_negative_axis_and_vmap_of_jit_and_scan():
    r = plax.new_ref(jnp.zeros((2, 3, 4)))

    def f(ref, x):
        ref[1:] += x[1:]
        return ref[0]
    out = plax.vmap(plax.vmap(f, in_axes=(1, 0)), in_axes=(0, 0))(r, jnp.ones((2, 4, 3)))
    assert out.shape == (2, 4)
    want = np.zeros((2, 3, 4), np.float32)
    want[:, 1:, :] = 1.0
    np.testing.assert_array_equal(r[...], want)

    q = plax.new_ref(jnp.zeros((2, 3)))
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)

    def add(ref, x):
        ref[...] += x
        return ref[0]
    np.testing.assert_array_equal(plax.vmap(add, in_axes=(-1, 0))(q, x), x[:, 0])
    np.testing.assert_array_equal(q[...], x.T)
    np.testing.assert_array_equal(plax.vmap(plax.jit(add), in_axes=(1, 0))(q, x), 2 * x[:, 0])
    np.testing.assert_array_equal(q[...], 2 * x.T)

    def scan_add(ref, xs):
        def body(c, x):
            ref[...] += x
            return c, ()
        lax.scan(body, 0.0, xs)
    s = plax.new_ref(jnp.zeros((3, 2)))
    for run in (plax.vmap(scan_add, in_axes=(0, 1)),
                plax.jit(plax.vmap(scan_add, in_axes=(0, 1)))):
        run(s, jnp.ones((4, 3, 2)))
    np.testing.assert_array_equal(s[...], np.full((3, 2), 8.0))


def _branchy(ref, p, x):
    def yes():
        ref[0] += x

    def no():
        ref[1] = x * 10
    lax.cond(p, yes, no)

    def grow(c):
        ref[3] += x + 1.0
        return c + 1
    return lax.while_loop(lambda c: ref[3] < 5.0, grow, 0)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_vmap_with_batched_predicates_writes_only_the_taken_paths(jitted):
    # A cond with a batched predicate runs both branches and a while loop runs until
    # every example stops; each example's reference sees only its own path's writes.
    r = plax.new_ref(jnp.zeros((3, 4)))
    p, x = np.array([True, False, True]), np.array([1.0, 2.0, 3.0], np.float32)
    fn = plax.vmap(_branchy)
    n = (plax.jit(fn) if jitted else fn)(r, p, x)
    want = np.zeros((3, 4), np.float32)
    want_n = []
    for row, pi, xi in zip(want, p, x):
        if pi:
            row[0] += xi
        else:
            row[1] = xi * 10
        k = 0
        while row[3] < 5.0:
            row[3] += xi + 1.0
            k += 1
        want_n.append(k)
    np.testing.assert_array_equal(n, want_n)
    np.testing.assert_array_equal(r[...], want)


def test_vmap_of_cond_with_an_unbatched_reference():
    r = plax.new_ref(jnp.arange(3.0))
    # reading it under a batched predicate is fine
    got = plax.vmap(lambda p: lax.cond(p, lambda: r[0] + 1, lambda: r[1]))(
        jnp.array([True, False]))
    np.testing.assert_array_equal(got, [1, 1])
    with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
        plax.vmap(lambda p: lax.cond(p, lambda: r.__setitem__(0, 5.0), lambda: None))(
            jnp.array([True, False]))
    np.testing.assert_array_equal(r[...], [0, 1, 2])


def test_grad_and_jit_of_vmap_over_a_created_reference():
    def loss(x):
        r = plax.new_ref(jnp.zeros(3))

        def body(ref, v):
            ref[...] += v * x
        plax.vmap(body)(r, jnp.arange(3.0))
        return (r[...] ** 2).sum()
    # d/dx sum((v x)^2) = 2 x sum(v^2) = 20 at x = 2
    for fn in (plax.grad(loss), plax.jit(plax.grad(loss))):
        np.testing.assert_allclose(fn(2.0), 20.0)
    np.testing.assert_allclose(plax.vmap(loss)(jnp.array([1.0, 2.0])), [5.0, 20.0])


def test_vmap_writing_an_unbatched_reference_is_jax_error():
    r = plax.new_ref(jnp.zeros(2))

    def set_all(x):
        r[...] = x

    def add_all(x):
        plax.ref.addupdate(r, ..., x)

    def set_at(i):
        r[i] = 1.0
    for fun, arg, what in ((set_all, jnp.ones((3, 2)), "a set/swap operation"),
                           (add_all, jnp.ones((3, 2)), "an addupdate operation"),
                           (set_at, jnp.arange(2), "a set/swap operation")):
        with pytest.raises(Exception, match=re.escape(
                f"performing {what} with vmapped value on an unbatched array reference of "
                "type Ref{float32[2]}. Move the array reference to be an argument to the "
                "vmapped function?")) as info:
            plax.vmap(fun)(arg)
        assert type(info.value) is Exception  # JAX's class
    np.testing.assert_array_equal(r[...], [0, 0])
    np.testing.assert_array_equal(plax.vmap(lambda i: r[i])(jnp.array([1, 0, 1])), [0, 0, 0])


# --- jit(f).trace / lower / compile ------------------------------------------------------


def _write(ref, x):
    ref[...] = x + 1


def _write_and_read(ref, x):
    ref[...] = x + 1
    return x * 3, ref[0]


def test_trace_shows_reference_inputs():
    r = plax.new_ref(jnp.zeros(3))
    traced = plax.jit(_write).trace(r, jnp.ones(3))
    text = str(traced.jaxpr)
    assert text.startswith("{ lambda ; a:Ref{f32[3]} b:f32[3]. let") and "in () }" in text
    assert "= swap[spec=[...]] a c" in text  # indices print as JAX writes them
    text = str(plax.make_jaxpr(lambda r, i: r[i, 1:3])(plax.new_ref(jnp.zeros((2, 4))), 1))
    assert "get[spec=[*,1:3]] a b" in text
    (ref_aval, x_aval), kwargs = traced.in_avals
    assert isinstance(ref_aval, plax.ref.AbstractRef) and repr(ref_aval) == "Ref{float32[3]}"
    assert x_aval.shape == (3,) and not kwargs
    assert [a.donated for a in traced.args_info[0]] == [False, False]
    assert traced.out_info is None and plax.jit(_write).eval_shape(r, jnp.ones(3)) is None
    traced = plax.jit(_write_and_read).trace(r, jnp.ones(3))
    assert [o.shape for o in traced.out_info] == [(3,), ()]
    np.testing.assert_array_equal(r[...], [0, 0, 0])  # tracing writes nothing


def _main_signature(lowered) -> str:
    return re.search(r"func\.func public @main\((.*)\) ->", lowered.as_text()).group(1)


def test_lowered_module_donates_each_reference_to_its_final_value():
    r = plax.new_ref(jnp.zeros(3))
    lowered = plax.jit(_write).lower(r, jnp.ones(3))
    args = _main_signature(lowered)
    # The reference's value is an input (kept although the function never reads it),
    # donated to the only output, its final value.
    assert args.count("%arg") == 2 and "tf.aliasing_output = 0" in args.split("%arg1")[0]
    lowered = plax.jit(_write_and_read).lower(r, jnp.ones(3))
    args = _main_signature(lowered)
    # aliased to its own final value (output 2), not to the first f32[3] output
    assert "tf.aliasing_output = 2" in args.split("%arg1")[0] and args.count("aliasing") == 1
    assert [o.shape for o in lowered.out_info] == [(3,), ()]
    assert [a.shape for a in lowered.out_avals] == [(3,), ()]


def test_compiled_reads_and_writes_the_references():
    r = plax.new_ref(jnp.zeros(3))
    compiled = plax.jit(_write_and_read).lower(r, jnp.ones(3)).compile()
    before = r[...]  # handed to the user: the call must not donate this buffer
    user = jnp.full(3, 4.0)
    out, first = compiled(r, user)
    np.testing.assert_array_equal(out, [12, 12, 12])
    assert float(first) == 5.0
    np.testing.assert_array_equal(r[...], [5, 5, 5])
    np.testing.assert_array_equal(before, [0, 0, 0])
    np.testing.assert_array_equal(user, [4, 4, 4])
    other = plax.new_ref(jnp.ones(3))
    r[...] = user  # the reference now holds the user's array itself
    compiled(other, jnp.zeros(3))
    compiled(r, jnp.ones(3))
    np.testing.assert_array_equal(user, [4, 4, 4])
    np.testing.assert_array_equal(r[...], [2, 2, 2])
    np.testing.assert_array_equal(other[...], [1, 1, 1])
    assert plax.tree.structure(compiled.output_shardings) == plax.tree.structure((0, 0))
    assert len(compiled.input_shardings[0]) == 2


def test_compiled_with_a_closed_over_reference():
    counter = plax.new_ref(jnp.zeros(2))

    def step(v):
        counter[...] += v
        return v * 2

    traced = plax.jit(step).trace(jnp.ones(2))
    assert str(traced.jaxpr).startswith("{ lambda a:Ref{f32[2]}; b:f32[2]. let")
    compiled = traced.lower().compile()
    np.testing.assert_array_equal(compiled(jnp.ones(2)), [2, 2])
    compiled(jnp.full(2, 3.0))
    np.testing.assert_array_equal(counter[...], [4, 4])
    np.testing.assert_array_equal(plax.jit(step)(jnp.ones(2)), [2, 2])  # shares the trace
    np.testing.assert_array_equal(counter[...], [5, 5])


def test_staged_references_bad_inputs():
    r = plax.new_ref(jnp.zeros(3))
    compiled = plax.jit(_write).lower(r, jnp.ones(3)).compile()
    with pytest.raises(TypeError, match=r"compiled with Ref\{f32\[3\]\} and called with "
                                        r"f32\[3\]"):
        compiled(jnp.zeros(3), jnp.ones(3))

    def both(a, b):
        a[...] = b[...]
    with pytest.raises(ValueError, match="appeared at both a and b"):
        plax.jit(both).trace(r, r)
    compiled = plax.jit(both).lower(r, plax.new_ref(jnp.ones(3))).compile()
    with pytest.raises(ValueError, match="appeared at both a and b"):
        compiled(r, r)
    with pytest.raises(ValueError, match="mutable array references cannot be returned"):
        plax.jit(lambda a: a).trace(r)
    np.testing.assert_array_equal(r[...], [0, 0, 0])


@requires_jax
def test_same_as_jax():
    assert_same_as_jax("""
        x = inputs["x"]
        r = lib.new_ref(jnp.zeros((3, 4)))

        def f(ref, i, v):
            old = lib.ref.swap(ref, i, v)
            lib.ref.addupdate(ref, slice(1, 3), v * jnp.ones(2))
            ref[2] += ref[0]
            return old * 2
        results["vmap_out"] = lib.vmap(f, in_axes=(0, 0, 0))(r, jnp.array([0, 2, 3]), x[:3])
        results["vmap_ref"] = r[...]
        results["vmap_cols"] = lib.vmap(f, in_axes=(1, None, 0))(r, 1, x)
        results["vmap_ref_after"] = lib.freeze(r)

        def g(ref, v):
            ref[...] += v
            return v.sum(), ref[1]
        q = lib.new_ref(jnp.ones(4))
        lowered = lib.jit(g).lower(q, x)
        main = lowered.as_text().split("func.func public @main(")[1].split(") ->")[0]
        results["num_args"] = np.array(main.count("%arg"))
        results["aliased"] = np.array(main.split("%arg1")[0].count("tf.aliasing_output = 2"))
        compiled = lowered.compile()
        results["out"] = compiled(q, x)[0]
        results["read"] = compiled(q, x)[1]
        results["q"] = q[...]

        def loss(ref, v):
            ref[...] += 1.0
            return (ref[...] * v).sum()
        batch = lib.new_ref(jnp.zeros((2, 3)))
        results["vmap_grad"] = lib.vmap(lib.grad(loss, argnums=1))(batch, x[:2])
        results["vmap_grad_ref"] = batch[...]
    """, {"x": np.linspace(0.5, 2.0, 4, dtype=np.float32)})
