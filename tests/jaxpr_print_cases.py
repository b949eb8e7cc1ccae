"""A table of programs whose printed Jaxprs plax and JAX must agree on, generated
over ops and transforms (tests/test_jaxpr_printing.py runs it under both).

`cases(jax)` takes the library (`plax` or `jax`) and returns {name: (function,
arguments)}; the arguments are NumPy values, so both libraries see the same inputs.
This module imports neither library itself: the JAX side execs it in a subprocess.
"""
from __future__ import annotations

import numpy as np

F = np.arange(1.0, 4.0, dtype=np.float32) / 4  # f32[3], inside every unary op's domain
M = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 8  # f32[2,3]
N = np.arange(3, dtype=np.int32)  # i32[3]
B = np.array([True, False, True])
S = np.float32(0.5)
SQ = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, 0.25], [0.5, 0.25, 1.5]], np.float32)  # SPD

UNARY = ["sin", "cos", "tan", "tanh", "exp", "log", "log1p", "expm1", "sqrt", "abs",
         "negative", "sign", "floor", "ceil", "round", "exp2", "log2", "log10", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh", "square", "reciprocal",
         "cbrt", "isnan", "isfinite", "deg2rad", "rint", "trunc", "positive", "sinc"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
          "arctan2", "equal", "less", "greater_equal", "not_equal", "hypot",
          "logaddexp", "copysign", "nextafter", "float_power", "fmax", "heaviside"]
INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
              "floor_divide", "remainder", "gcd", "add", "multiply"]
LAX_UNARY = ["sin", "cos", "exp", "log", "tanh", "logistic", "rsqrt", "sqrt", "cbrt", "neg",
             "abs", "sign", "floor", "ceil", "exp2", "expm1", "log1p", "erf", "erfc",
             "lgamma", "digamma", "erf_inv", "is_finite", "square", "integer_pow3"]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin",
              "cumsum", "cumprod", "all", "any", "logsumexp", "median", "ptp"]
NN = ["relu", "gelu", "sigmoid", "silu", "softplus", "softmax", "log_softmax",
      "elu", "leaky_relu", "relu6", "hard_tanh", "tanh", "swish", "selu", "celu",
      "log_sigmoid", "standardize", "glu_pairs"]


def cases(jax) -> dict:
    import importlib
    jnp = importlib.import_module(jax.__name__ + ".numpy")
    lax = importlib.import_module(jax.__name__ + ".lax")
    nn = importlib.import_module(jax.__name__ + ".nn")
    random = importlib.import_module(jax.__name__ + ".random")
    special = importlib.import_module(jax.__name__ + ".scipy.special")
    linalg = importlib.import_module(jax.__name__ + ".numpy.linalg")
    sla = importlib.import_module(jax.__name__ + ".scipy.linalg")
    ad_checkpoint = importlib.import_module(jax.__name__ + ".ad_checkpoint")
    out: dict = {}

    def add(name, fun, *args):
        assert name not in out, f"two cases named {name!r}"
        out[name] = (fun, args)

    for op in UNARY:
        f = getattr(jnp, op)
        add(f"jnp.{op}", f, F)
        add(f"jit(jnp.{op})", jax.jit(f), F)
        add(f"vmap(jnp.{op})", jax.vmap(f), M)
        if op not in ("isnan", "isfinite", "sign", "floor", "ceil", "round", "rint", "trunc"):
            add(f"grad(jnp.{op})", jax.grad(lambda x, f=f: jnp.sum(f(x))), F)
    for op in BINARY:
        f = getattr(jnp, op)
        add(f"jnp.{op}", f, F, M)
        add(f"jnp.{op}(x, 2.0)", lambda x, f=f: f(x, 2.0), F)
        add(f"jnp.{op}(3, x)", lambda x, f=f: f(3, x), F)
        add(f"vmap(jnp.{op})", jax.vmap(f, in_axes=(0, None)), M, F)
    for op in INT_BINARY:
        f = getattr(jnp, op)
        add(f"int jnp.{op}", f, N, np.int32(2))
        add(f"int jnp.{op}(x, 1)", lambda x, f=f: f(x, 1), N)
    for op in LAX_UNARY:
        f = (lambda x: lax.integer_pow(x, 3)) if op == "integer_pow3" else getattr(lax, op)
        add(f"lax.{op}", f, F)
        add(f"jvp(lax.{op})", lambda x, t, f=f: jax.jvp(f, (x,), (t,)), F, F)
    for op in REDUCTIONS:
        f = getattr(jax.scipy.special, op) if op == "logsumexp" else getattr(jnp, op)
        arg = M > 0.2 if op in ("all", "any") else M
        add(f"jnp.{op}", f, arg)
        add(f"jnp.{op}(axis=0)", lambda x, f=f: f(x, axis=0), arg)
        add(f"jnp.{op}(axis=-1)", lambda x, f=f: f(x, axis=-1), arg)
        if op not in ("argmax", "argmin", "all", "any", "median", "cumsum", "cumprod"):
            add(f"grad(jnp.{op})", jax.grad(lambda x, f=f: jnp.sum(f(x, axis=1))), M)
    for op in NN:
        if op == "glu_pairs":
            f = lambda x: nn.glu(x, axis=0)  # noqa: E731
        elif op in ("tanh",):
            f = jnp.tanh
        else:
            f = getattr(nn, op)
        add(f"nn.{op}", f, M)
        add(f"jit(nn.{op})", jax.jit(f), M)
        add(f"grad(nn.{op})", jax.grad(lambda x, f=f: jnp.sum(f(x))), M)

    # arithmetic with Python scalars and weak types
    add("x + 1", lambda x: x + 1, F)
    add("x * 2.0 + 1", lambda x: x * 2.0 + 1, F)
    add("1 - x", lambda x: 1 - x, F)
    add("x ** 2", lambda x: x ** 2, F)
    add("x ** 0.5", lambda x: x ** 0.5, F)
    add("x / 2", lambda x: x / 2, F)
    add("i + 1", lambda x: x + 1, N)
    add("i * 1.5", lambda x: x * 1.5, N)
    add("i / 2", lambda x: x / 2, N)
    add("i // 2", lambda x: x // 2, N)
    add("i % 2", lambda x: x % 2, N)
    add("-x", lambda x: -x, F)
    add("x > 0", lambda x: x > 0, F)
    add("b & b", lambda b: b & ~b, B)
    add("scalar arithmetic", lambda s: s * 3.0 - s / 2, S)
    add("python scalar arg", lambda s: s + 1.0, 2.0)
    add("int python scalar arg", lambda s: s * 2, 3)
    add("astype f16", lambda x: x.astype(jnp.float16), F)
    add("astype i32", lambda x: x.astype(jnp.int32), F)
    add("astype bool", lambda x: x.astype(bool), F)
    add("astype None", lambda x: x.astype(None), N)
    C = F.astype(np.complex64) * 1j
    add("complex astype bool", lambda c: c.astype(bool), C)
    add("lax.convert complex to bool", lambda c: lax.convert_element_type(c, bool), C)
    add("jnp.any of floats", lambda x: (jnp.any(x), jnp.all(x, axis=0)), M)
    add("jnp.all of complex", jnp.all, C)
    add("logical_and scalar array", lambda x: jnp.logical_and(2, x), F)
    add("i astype f32", lambda x: x.astype(jnp.float32), N)
    add("f16 + 1", lambda x: x.astype(jnp.float16) + 1, F)
    add("complex", lambda x: (x + 1j * x).real, F)

    # shapes
    add("reshape", lambda x: x.reshape(3, 2), M)
    add("reshape -1", lambda x: jnp.reshape(x, (-1,)), M)
    add("ravel", jnp.ravel, M)
    add("transpose", jnp.transpose, M)
    add(".T", lambda x: x.T, M)
    add("swapaxes", lambda x: jnp.swapaxes(x, 0, 1), M)
    add("expand_dims", lambda x: jnp.expand_dims(x, 0), M)
    add("x[None]", lambda x: x[None], M)
    add("squeeze", lambda x: jnp.squeeze(x[None]), M)
    add("concatenate", lambda x: jnp.concatenate([x, x]), M)
    add("concatenate axis=1", lambda x: jnp.concatenate([x, x], axis=1), M)
    add("stack", lambda x: jnp.stack([x, x]), F)
    add("hstack", lambda x: jnp.hstack([x, x]), F)
    add("vstack", lambda x: jnp.vstack([x, x]), F)
    add("flip", jnp.flip, M)
    add("broadcast_to", lambda x: jnp.broadcast_to(x, (2, 3)), F)
    add("tile", lambda x: jnp.tile(x, 2), F)
    add("repeat", lambda x: jnp.repeat(x, 2), F)
    add("pad", lambda x: jnp.pad(x, 1), F)
    add("where", lambda x: jnp.where(x > 0.3, x, 0.0), F)
    add("where 3", lambda x, y: jnp.where(x > y, x, y), F, F)
    add("clip", lambda x: jnp.clip(x, 0.1, 0.5), F)
    add("roll", lambda x: jnp.roll(x, 1), F)
    add("array([a, b, c])", lambda a, b: jnp.array([a, b, 3.0]), S, S)
    add("array of arrays", lambda x: jnp.array([x, x]), F)
    add("asarray", jnp.asarray, F)
    add("sort", jnp.sort, F)
    add("argsort", jnp.argsort, F)
    for method in ("scan", "scan_unrolled", "sort", "compare_all"):
        for side in ("left", "right"):
            add(f"searchsorted {method} {side}",
                lambda a, v, m=method, s=side: jnp.searchsorted(a, v, side=s, method=m), F, M)
    add("searchsorted complex", jnp.searchsorted, F.astype(np.complex64), np.complex64(0.5j))
    add("searchsorted int, sorter=",
        lambda a, v, s: jnp.searchsorted(a, v, sorter=s), N, 1.5, N[::-1])
    add("digitize", jnp.digitize, M, F)
    add("cumsum lax", lambda x: lax.cumsum(x), F)
    add("diag", jnp.diag, F)
    add("outer", jnp.outer, F, F)
    add("trace", jnp.trace, M)
    add("tril", jnp.tril, M)
    add("split", lambda x: jnp.split(x, 3), F)
    add("meshgrid", lambda x: jnp.meshgrid(x, x), F)

    # indexing
    add("x[0]", lambda x: x[0], M)
    add("x[0, 1]", lambda x: x[0, 1], M)
    add("x[1:]", lambda x: x[1:], F)
    add("x[::2]", lambda x: x[::2], F)
    add("x[::-1]", lambda x: x[::-1], F)
    add("x[..., 0]", lambda x: x[..., 0], M)
    add("x[:, 1]", lambda x: x[:, 1], M)
    add("x[i]", lambda x, i: x[i], F, np.int32(1))
    add("x[idx]", lambda x, i: x[i], F, N)
    add("x[-1, i]", lambda x, i: x[-1, i], M, np.int32(1))
    add("x[i, ::-1]", lambda x, i: x[i, ::-1], M, np.int32(1))
    add("x[i, 2:0:-1]", lambda x, i: x[i, 2:0:-1], M, np.int32(1))
    add("x[i, 5]", lambda x, i: x[i, 5], M, np.int32(1))
    add("x[1::-1]", lambda x: x[1::-1], F)
    add("x[::-2]", lambda x: x[::-2], F)
    add("x[-1, :0:-1]", lambda x: x[-1, :0:-1], M)
    add("x[5] out of bounds", lambda x: x[5], M)
    add("x.at[0].set", lambda x: x.at[0].set(1.0), F)
    add("x.at[i].add", lambda x, i: x.at[i].add(1.0), F, np.int32(1))
    add("x.at[1:].mul", lambda x: x.at[1:].multiply(2.0), F)
    add("take", lambda x, i: jnp.take(x, i), F, N)
    add("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=0), F, N)
    add("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i,), (2,)), F, np.int32(1))
    add("dynamic_update_slice",
        lambda x, i: lax.dynamic_update_slice(x, x[:1], (i,)), F, np.int32(1))
    add("dynamic_slice_in_dim", lambda x, i: lax.dynamic_slice_in_dim(x, i, 2), F,
        np.int32(0))
    add("lax.slice", lambda x: lax.slice(x, (0, 1), (2, 3)), M)
    add("lax.index_in_dim", lambda x: lax.index_in_dim(x, 1, keepdims=False), M)

    # products
    add("dot", jnp.dot, F, F)
    add("matmul", jnp.matmul, M, M.T)
    add("@", lambda a, b: a @ b, M, F)
    add("einsum ij,j", lambda a, b: jnp.einsum("ij,j->i", a, b), M, F)
    add("einsum ij,kj", lambda a: jnp.einsum("ij,kj->ik", a, a), M)
    add("inner", jnp.inner, F, F)
    add("vdot", jnp.vdot, F, F)
    add("tensordot", lambda a: jnp.tensordot(a, a, axes=([1], [1])), M)
    add("lax.dot", lax.dot, F, F)
    add("lax.dot_general", lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
        M, M.T)
    add("lax.batch_matmul", lambda a: lax.batch_matmul(a[None], a.T[None]), M)
    add("grad matmul", jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))), M.T, M)
    add("linear layer", lambda w, b, x: jnp.tanh(x @ w + b), M.T, np.float32([1, 2]), M)

    # lax
    add("lax.add", lax.add, F, F)
    add("lax.mul", lax.mul, F, F)
    add("lax.max", lax.max, F, F)
    add("lax.pow", lax.pow, F, F)
    add("lax.div int", lax.div, N, N + 1)
    add("lax.rem", lax.rem, F, F)
    add("lax.select", lax.select, B, F, F)
    add("lax.clamp", lambda x: lax.clamp(0.2, x, 0.6), F)
    add("lax.convert_element_type", lambda x: lax.convert_element_type(x, jnp.int32), F)
    add("lax.bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, jnp.int32), F)
    add("lax.iota", lambda: lax.iota(jnp.int32, 4))
    add("lax.broadcasted_iota", lambda: lax.broadcasted_iota(jnp.int32, (2, 3), 1))
    add("lax.broadcast", lambda x: lax.broadcast(x, (2,)), F)
    add("lax.broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), F)
    add("lax.reshape", lambda x: lax.reshape(x, (3, 2)), M)
    add("lax.transpose", lambda x: lax.transpose(x, (1, 0)), M)
    add("lax.rev", lambda x: lax.rev(x, (0,)), F)
    add("lax.pad", lambda x: lax.pad(x, 0.0, ((1, 2, 1),)), F)
    add("lax.concatenate", lambda x: lax.concatenate([x, x], 0), F)
    add("lax.reduce_sum", lambda x: lax.reduce_sum(x, (0,)), M)
    add("lax.reduce_max", lambda x: lax.reduce_max(x, (0, 1)), M)
    add("lax.argmax", lambda x: lax.argmax(x, 0, jnp.int32), M)
    add("lax.sort", lax.sort, F)
    add("lax.top_k", lambda x: lax.top_k(x, 2), F)
    add("lax.squeeze", lambda x: lax.squeeze(x[None], (0,)), F)
    add("lax.expand_dims", lambda x: lax.expand_dims(x, (0,)), F)
    add("lax.cumsum", lambda x: lax.cumsum(x, 0, reverse=True), F)
    add("lax.cummax", lambda x: lax.cummax(x, 0), F)
    add("lax.reduce_window", lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,),
                                                         "VALID"), F)
    add("lax.stop_gradient", lax.stop_gradient, F)
    add("lax.nextafter", lax.nextafter, F, F)
    add("lax.atan2", lax.atan2, F, F)
    add("lax.complex", lax.complex, F, F)
    add("lax.population_count", lax.population_count, N)
    add("lax.shift_left", lax.shift_left, N, N)
    add("lax.conv", lambda x, k: lax.conv(x, k, (1, 1), "SAME"),
        np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32))
    add("lax.reduce_precision", lambda x: lax.reduce_precision(x, 5, 10), F)

    # control flow
    add("cond", lambda p, x: lax.cond(p > 0, lambda: x, lambda: -x), S, F)
    add("cond operands", lambda p, x: lax.cond(p > 0, jnp.sin, jnp.cos, x), S, F)
    add("cond bool", lambda x: lax.cond(True, lambda y: y + 1, lambda y: y, x), F)
    add("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tan], x), np.int32(1), F)
    add("platform_dependent", lambda x: lax.platform_dependent(x, cpu=jnp.sin, cuda=jnp.cos), F)
    add("platform_dependent default",
        lambda x: lax.platform_dependent(x, tpu=jnp.sin, default=jnp.cos), F)
    add("grad platform_dependent",
        jax.grad(lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)), S)
    add("vmap platform_dependent",
        jax.vmap(lambda x: lax.platform_dependent(x, cpu=jnp.sin, rocm=jnp.cos)), F)
    add("while_loop", lambda x: lax.while_loop(lambda c: c[0] < 3,
                                               lambda c: (c[0] + 1, c[1] * 2), (0, x)), F)
    add("fori_loop", lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2, x), F)
    add("fori_loop traced", lambda n, x: lax.fori_loop(0, n, lambda i, c: c + i, x),
        np.int32(3), F)
    add("scan", lambda x: lax.scan(lambda c, t: (c + t, c * t), 0.0, x), F)
    add("scan f32 init", lambda x: lax.scan(lambda c, t: (c + t, c), S, x), F)
    add("scan length", lambda x: lax.scan(lambda c, _: (c * 2, c), x, length=3), F)
    add("scan reverse", lambda x: lax.scan(lambda c, t: (c + t, c), S, x, reverse=True), F)
    add("scan forwarding", lambda x: lax.scan(lambda c, t: ((c[0] + t, c[1]), (t, c[0])),
                                              (0.0, S), x), F)
    add("scan forwarding NumPy xs", lambda c: lax.scan(lambda c, t: (c * t, t), c, F), S)
    add("map", lambda x: lax.map(jnp.sin, x), M)
    add("associative_scan", lambda x: lax.associative_scan(jnp.add, x), F)
    add("grad cond", jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x)), S)
    add("grad scan", jax.grad(lambda x: lax.scan(lambda c, t: (c * t, None), S, x)[0]), F)
    add("grad fori", jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c), x)), S)
    add("vmap cond", jax.vmap(lambda p, x: lax.cond(p > 0, jnp.sin, jnp.cos, x)), F, F)
    add("vmap scan", jax.vmap(lambda c, x: lax.scan(lambda c, t: (c + t, c), c, x),
                              in_axes=(None, 1)), S, M)
    add("vmap while", jax.vmap(lambda x: lax.while_loop(lambda c: c < 3, lambda c: c + 1,
                                                        x)), N)

    # transforms
    def mlp(w, x):
        return jnp.sum(jnp.tanh(x @ w))
    add("jit nested", lambda x: jax.jit(lambda y: jnp.sin(y) * 2)(x) + 1, F)
    add("jit twice", lambda x: (lambda g: g(g(x)))(jax.jit(jnp.sin)), F)
    add("jit static", lambda x: jax.jit(lambda y, n: y * n, static_argnums=1)(x, 3), F)
    add("jit donate", jax.jit(jnp.sin, donate_argnums=0), F)
    add("jit kwargs", lambda x: jax.jit(lambda y, *, s: y * s)(x, s=2.0), F)
    add("jit pytree", lambda d: jax.jit(lambda t: t["a"] + t["b"])(d),
        {"a": F, "b": F})
    add("jit many eqns", jax.jit(lambda x: jnp.sin(jnp.cos(jnp.tan(jnp.exp(jnp.log(
        jnp.sqrt(jnp.abs(jnp.tanh(jnp.sinh(jnp.cosh(jnp.floor(x)))))))))))), F)
    add("nested many eqns", lambda x: jax.jit(lambda y: jnp.sin(jnp.cos(jnp.tan(jnp.exp(
        jnp.log(jnp.sqrt(jnp.abs(jnp.tanh(jnp.sinh(jnp.cosh(jnp.floor(y))))))))))))(x), F)
    add("grad", jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)), F)
    add("grad mlp", jax.grad(mlp), M.T, M)
    add("value_and_grad", jax.value_and_grad(mlp), M.T, M)
    add("grad argnums", jax.grad(lambda a, b: jnp.sum(a * b), argnums=(0, 1)), F, F)
    add("grad has_aux", jax.grad(lambda x: (jnp.sum(x ** 2), x), has_aux=True), F)
    # JAX's jit forwarding: the known call returns no input passed on, and no residual
    # that is also an output.
    add("grad clip scalar", jax.grad(lambda x: jnp.sum(jnp.clip(x)).astype(float)), S)
    add("grad jit identity", jax.grad(jax.jit(lambda x: x)), S)
    add("grad jit exp", jax.grad(jax.jit(jnp.exp)), S)
    add("jvp", lambda x, t: jax.jvp(jnp.sin, (x,), (t,)), F, F)
    add("vjp", lambda x, c: jax.vjp(jnp.sin, x)[1](c), F, F)
    add("linearize", lambda x, t: jax.linearize(jnp.sin, x)[1](t), F, F)
    add("jacfwd", jax.jacfwd(jnp.sin), F)
    add("jacrev", jax.jacrev(jnp.sin), F)
    add("hessian", jax.hessian(lambda x: jnp.sum(x ** 3)), F)
    add("vmap", jax.vmap(lambda x: x @ x), M)
    add("vmap in_axes", jax.vmap(lambda a, b: a * b, in_axes=(1, None)), M, np.float32(2))
    add("vmap out_axes", jax.vmap(lambda a: a * 2, out_axes=1), M)
    # elementwise operands batched at other positions, unbatched, and per-example scalars
    add("vmap mixed operands", jax.vmap(lambda a, b, c, s: jnp.sin(a) * b + c * s,
                                        in_axes=(1, 1, None, 0), out_axes=1), M, M, F[:2], F)
    add("vmap of grad", jax.vmap(jax.grad(lambda x: jnp.sin(x) * x)), F)
    add("grad of vmap", jax.grad(lambda x: jnp.sum(jax.vmap(jnp.sin)(x))), F)
    add("checkpoint", jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), F)
    add("grad checkpoint", jax.grad(lambda x: jnp.sum(jax.checkpoint(
        lambda y: jnp.sin(jnp.sin(y)))(x))), F)
    cp = jax.checkpoint_policies

    def two_layers(w, x):
        h = ad_checkpoint.checkpoint_name(jnp.sin(w @ x), "h")
        return jnp.sin(w.T @ h)
    add("vjp residuals: the arguments first", lambda w, x: jax.vjp(two_layers, w, x), M, F)
    for policy in ("dots_with_no_batch_dims_saveable", "dots_saveable", "everything_saveable",
                   "save_only_these_names('h')", "save_any_names_but_these('g')"):
        remat = jax.checkpoint(two_layers, policy=eval("cp." + policy, {"cp": cp}))
        add(f"checkpoint {policy}", remat, M, F)
        add(f"vjp checkpoint {policy}", lambda w, x, f=remat: jax.vjp(f, w, x), M, F)
        add(f"grad checkpoint {policy}",
            jax.grad(lambda w, x, f=remat: jnp.sum(f(w, x)), (0, 1)), M, F)
    add("vjp of checkpoints in a row", lambda x: jax.vjp(
        lambda x: jax.checkpoint(jnp.sin)(jax.checkpoint(jnp.cos)(x) * x), x), F)
    add("vjp of nested checkpoints", lambda x: jax.vjp(
        jax.checkpoint(lambda x: jnp.sin(jax.checkpoint(jnp.cos)(jnp.sin(x)))), x), F)
    add("stop_gradient", jax.grad(lambda x: jnp.sum(x * lax.stop_gradient(x))), F)

    @jax.custom_jvp
    def softclip(x):
        return jnp.tanh(x)

    @softclip.defjvp
    def _softclip_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = jnp.tanh(x)
        return y, t * (1 - y ** 2)

    @jax.custom_vjp
    def clipgrad(x):
        return x * 2

    clipgrad.defvjp(lambda x: (x * 2, None), lambda _, g: (jnp.clip(g, -1, 1),))
    add("custom_jvp", softclip, F)
    add("grad custom_jvp", jax.grad(lambda x: jnp.sum(softclip(x))), F)
    add("custom_vjp", clipgrad, F)
    add("grad custom_vjp", jax.grad(lambda x: jnp.sum(clipgrad(x))), F)

    # collectives, over 4 devices (the tests have 8; a tool run on one CPU device
    # leaves them out)
    groups = [[0, 2], [3, 1]]

    def grouped(x):
        return (lax.psum(x, "i", axis_index_groups=groups),
                lax.pmax(x, "i", axis_index_groups=groups),
                lax.pmean(x, "i", axis_index_groups=groups))
    if jax.device_count() >= 4:
        add("pmap psum axis_index_groups", jax.pmap(grouped, "i"),
            np.arange(8.0, dtype=np.float32).reshape(4, 2))
    _collective_cases(jax, lax, add)
    _loop_derivative_cases(jax, jnp, lax, add)

    # creation
    add("zeros", lambda: jnp.zeros((2, 3)))
    add("ones_like", jnp.ones_like, F)
    add("zeros_like", jnp.zeros_like, M)
    add("full", lambda x: jnp.full((3,), x), S)
    add("arange", lambda: jnp.arange(4))
    add("arange float", lambda: jnp.arange(0.0, 1.0, 0.25))
    add("linspace", lambda: jnp.linspace(0.0, 1.0, 5))
    add("eye", lambda: jnp.eye(3))
    add("empty", lambda: jnp.empty((2,)))
    add("constant array", lambda x: x + np.arange(3, dtype=np.float32), F)
    add("identity", lambda x: x, F)
    add("two outputs", lambda x: (x, x), F)
    add("literal output", lambda x: 1.0, F)
    add("no inputs", lambda: jnp.float32(2) * 3)
    add("unused input", lambda x, y: x * 2, F, F)

    # jnp functions that are jit functions, as JAX's (jax_jits.py): an alias calls its
    # target's jit; an inline one folds the conversions of its scalar arguments
    add("jnp.acosh", jnp.acosh, F + 1)
    add("jnp.around(x, 1)", lambda x: jnp.around(x, 1), F)
    add("jnp.mod", jnp.mod, F, M)
    add("jnp.divide(x, 2)", lambda x: jnp.divide(x, 2), F)
    add("jnp.atan2(x, 1)", lambda x: jnp.atan2(x, 1), F)
    add("jnp.conj", jnp.conj, F)
    add("int jnp.invert", jnp.invert, N)
    add("int jnp.bitwise_left_shift(x, 1)", lambda x: jnp.bitwise_left_shift(x, 1), N)
    add("int jnp.bitwise_count", jnp.bitwise_count, N)
    add("jnp.isinf", jnp.isinf, F)
    add("jnp.angle", jnp.angle, F)
    add("jnp.atleast_2d", jnp.atleast_2d, F)
    add("jnp.block", lambda x: jnp.block([[x, x]]), M)
    add("jnp.resize", lambda x: jnp.resize(x, (2, 2)), F)
    add("jnp.diff", jnp.diff, M)
    add("jnp.ediff1d", jnp.ediff1d, F)
    add("jnp.polyval(x, 2)", lambda x: jnp.polyval(x, 2), F)
    for name, args in [("sin", (1,)), ("exp2", (N,)), ("arctan2", (2, F)), ("less", (2, F)),
                       ("equal", (N, 1.5)), ("true_divide", (N, 2)), ("float_power", (F, 3)),
                       ("left_shift", (N, 1)), ("square", (3,)), ("logical_not", (2.5,)),
                       ("nextafter", (F, 2)), ("sign", (np.float32(-2),)), ("real", (S,))]:
        f = getattr(jnp, name)
        add(f"jnp.{name} of constants", lambda f=f, a=args: f(*a))

    # an inline jit folds the conversions of its Python-scalar arguments, as JAX's
    add("inline jit with a Python scalar", lambda x: jax.jit(
        lambda a, b: a * b + jnp.sin(b), inline=True)(x, 2), F)

    # random
    add("PRNGKey", lambda: random.PRNGKey(0))
    add("key", lambda: random.key(0))
    add("random.split", lambda: random.split(random.PRNGKey(0)))
    add("uniform", lambda: random.uniform(random.PRNGKey(0), (3,)))
    add("normal", lambda: random.normal(random.PRNGKey(0), (2,)))
    add("bernoulli", lambda: random.bernoulli(random.PRNGKey(1), 0.5, (2,)))
    add("randint", lambda: random.randint(random.PRNGKey(1), (2,), 0, 5))
    add("fold_in", lambda: random.fold_in(random.PRNGKey(1), 3))

    # special
    add("special.erf", special.erf, F)
    add("special.gammaln", special.gammaln, F)
    add("special.logit", special.logit, F)
    add("special.expit", special.expit, F)
    add("special.xlogy", special.xlogy, F, F)
    add("nn.one_hot", lambda i: nn.one_hot(i, 3), N)
    add("nn.logsumexp", lambda x: nn.logsumexp(x, axis=1), M)
    for name in ("beta", "betaln", "boxcox", "boxcox1p", "kl_div", "poch", "rel_entr"):
        add(f"special.{name}", getattr(special, name), F, F + 1)
    add("special.gamma", special.gamma, F)
    add("special.loggamma", special.loggamma, F)
    add("special.bessel_jn", lambda x: special.bessel_jn(x, v=2), F)
    add("nn.log1mexp", nn.log1mexp, F)

    # linear algebra: the functions JAX jits (jax_jits.py) print as its jit calls
    for name in ("cholesky", "cond", "eigh", "eigvals", "eigvalsh", "inv", "matrix_rank",
                 "norm", "qr", "svd"):
        add(f"linalg.{name}", getattr(linalg, name), SQ)
    add("linalg.norm of a vector", linalg.norm, F)
    add("linalg.matrix_power", lambda a: linalg.matrix_power(a, 3), SQ)
    add("linalg.solve", linalg.solve, SQ, F)
    add("grad linalg.solve", jax.grad(lambda a, b: jnp.sum(linalg.solve(a, b)), (0, 1)), SQ, F)
    add("grad linalg.inv", jax.grad(lambda a: jnp.sum(linalg.inv(a)[0])), SQ)
    add("vmap linalg.solve", jax.vmap(linalg.solve, (None, 0)), SQ, M)
    add("lax.dynamic_index_in_dim", lambda x: lax.dynamic_index_in_dim(x, 1), F)
    add("lax.dynamic_update_index_in_dim",
        lambda x: lax.dynamic_update_index_in_dim(x, S, 1, 0), F)
    add("lax.fft", lambda x: lax.fft(x, "FFT", (3,)), F.astype(np.complex64))
    add("sla.block_diag", sla.block_diag, SQ, M)
    add("sla.convolution_matrix", lambda a: sla.convolution_matrix(a, 4), F)
    add("sla.convolution_matrix batched same",
        lambda a: sla.convolution_matrix(a, 2, "same"), M)
    add("sla.toeplitz", sla.toeplitz, F, M)  # c batched, r not
    add("sla.toeplitz of c", sla.toeplitz, F)
    add("sla.hankel", sla.hankel, M, F)
    add("sla.circulant", sla.circulant, M)
    add("sla.leslie", sla.leslie, F, F[:2])
    add("sla.companion", sla.companion, F)
    add("sla.fiedler_companion", sla.fiedler_companion, np.arange(1.0, 6.0, dtype=np.float32))
    add("jnp.select", lambda x: jnp.select([x < 0.3, x > 0.6], [x, -x], 2.0), M)
    add("lax.conv_general_dilated_patches",
        lambda x: lax.conv_general_dilated_patches(x, (2,), (1,), "VALID"), M[None])

    # vectorize as JAX maps the loop dimensions: size-1 ones squeezed (not mapped),
    # one vmap per loop axis over the arguments that have it
    add("vectorize", jnp.vectorize(lambda a, b: a * b + 1), M[:, None], F[:2, None])
    add("vectorize signature", jnp.vectorize(jnp.dot, signature="(n),(n)->()"),
        M[None], M[:1, None])
    add("vectorize excluded",
        lambda x: jnp.vectorize(lambda a, n: a ** n, excluded={1})(x, 2), M)
    add("vectorize two outputs",
        jnp.vectorize(lambda u: (u.sum(), jnp.outer(u, u)), signature="(n)->(),(n,n)"), M)
    add("batched linalg.solve", linalg.solve, np.stack([SQ, SQ + 1])[:, None],
        np.stack([M.T] * 4)[:, :, :2])
    add("batched linalg.solve of a vector", linalg.solve, np.stack([SQ, SQ + 1]), F)
    for name in ("dft", "hadamard", "helmert", "hilbert", "invhilbert", "pascal", "invpascal"):
        add(f"sla.{name}", lambda name=name: getattr(sla, name)(4))
    for name in ("expm", "hessenberg", "lu", "lu_factor", "polar"):
        add(f"sla.{name}", getattr(sla, name), SQ)
    add("sla.expm_frechet", sla.expm_frechet, SQ, SQ)
    add("sla.lu_solve", lambda a, b: sla.lu_solve(sla.lu_factor(a), b), SQ, F)
    add("sla.rsf2csf", sla.rsf2csf, np.triu(SQ), np.eye(3, dtype=np.float32))
    add("sla.solve_sylvester", sla.solve_sylvester, SQ, SQ, SQ)

    # scalars, as tutorials pass them (`grad(f)(3.0)`): JAX folds conversions of host
    # scalars and forwards broadcasts to the operand's own shape where it traces, so the
    # seed of a gradient, a scalar's zeros and the like are literals
    for kind, scalar in SCALARS.items():
        for op in SCALAR_FUNCTIONS:
            f = getattr(jnp, op)
            add(f"jnp.{op}({kind})", f, scalar)
            add(f"grad(jnp.{op})({kind})",
                jax.grad(lambda x, f=f: jnp.sum(f(x)).astype(float)), float(scalar))
        add(f"nn.gelu({kind})", nn.gelu, scalar)
        add(f"grad(nn.sigmoid)({kind})", jax.grad(nn.sigmoid), float(scalar))
        add(f"nan_to_num({kind}, nan=inf)", lambda x: jnp.nan_to_num(x, nan=jnp.inf), scalar)
    # a zero tangent a jvp rule makes inside a linearized jit is a residual, as JAX's
    add("grad(jnp.sinc)(f32)", jax.grad(jnp.sinc), S)
    add("grad(jnp.var)(python float)", jax.grad(jnp.var), 1.5)
    add("grad(nn.elu)(f32)", jax.grad(nn.elu), S)
    add("grad(nn.hard_tanh)(python int)", jax.grad(nn.hard_tanh), 3.0)
    add("grad(jit(select_n)) zero tangent", jax.grad(jax.jit(
        lambda x: lax.select_n(x > 1, 1.0, x))), S)
    add("grad(jnp.max)(f32)", jax.grad(jnp.max), S)
    add("grad(atleast_1d)(f32)", jax.grad(lambda x: jnp.sum(jnp.atleast_1d(x))), S)
    add("grad of a stretched unit dimension", jax.grad(
        lambda x: jnp.sum(lax.broadcast_in_dim(x, (2, 3), (0, 1)) * M)), M[:1])
    add("folded constants", lambda x: (
        jnp.ones_like(x), lax.convert_element_type(2, jnp.float32) * 1,
        jax.grad(lambda y: y)(x), jax.grad(jnp.sum)(x), jnp.zeros_like(x) + 0), 1.0)
    return {k: v for k, v in out.items() if k is not None}


SCALARS = {"python float": 1.5, "f32": np.float32(0.5), "python int": 3}
SCALAR_FUNCTIONS = ["sin", "exp", "sqrt", "square", "abs", "zeros_like", "ones_like", "imag",
                    "real", "isfinite", "sum", "mean", "cumsum", "positive", "arctan"]


MEMBERS = 8  # the members of the axis 'i' the collective cases map over
BLOCK = np.arange(32.0, dtype=np.float32).reshape(8, 4) / 8  # what each member holds


def _loop_derivative_cases(jax, jnp, lax, add) -> None:
    """Derivatives and batching of loops (scan, fori_loop, while_loop, map, cond, switch)."""
    def step(c, t):
        return c * jnp.sin(t), c + t

    def loss(x):
        c, ys = lax.scan(step, S, x)
        return c + jnp.sum(ys)
    add("grad scan ys used", jax.grad(loss), F)
    add("value_and_grad scan", jax.value_and_grad(loss), F)
    add("vjp scan", lambda x, c: jax.vjp(lambda x: lax.scan(step, S, x), x)[1]((S, c)), F, F)
    add("jvp scan", lambda x, t: jax.jvp(lambda x: lax.scan(step, S, x), (x,), (t,)), F, F)
    add("linearize scan", lambda x, t: jax.linearize(lambda x: lax.scan(step, S, x), x)[1](t),
        F, F)
    add("linearize scan jaxpr", lambda x: jax.linearize(lambda x: lax.scan(step, S, x), x), F)
    add("grad scan closed-over const",
        jax.grad(lambda x: lax.scan(lambda c, t: (c * t + N.astype(np.float32)[0], None),
                                    S, x)[0]), F)
    add("grad scan converted const", lambda x, n: jax.grad(lambda x: lax.scan(
        lambda c, t: (c * t + n.astype(jnp.float32), None), S, x)[0])(x), F, np.int32(2))
    add("grad scan weak init", jax.grad(lambda x: jnp.sum(lax.scan(
        lambda c, t: (c + t, c * t), 0.0, x)[1])), F)
    add("grad scan closure", lambda w, x: jax.grad(
        lambda w: lax.scan(lambda c, t: (jnp.tanh(c * w + t), None), S, x)[0])(w), S, F)
    add("grad scan pytree carry", jax.grad(lambda x: jnp.sum(lax.scan(
        lambda c, t: ((c[0] * t, c[1] + c[0]), None), (S, S), x)[0][1])), F)
    add("grad scan reverse", jax.grad(lambda x: lax.scan(
        lambda c, t: (jnp.sin(c) * t, None), S, x, reverse=True)[0]), F)
    add("grad scan unroll", jax.grad(lambda x: lax.scan(
        lambda c, t: (jnp.sin(c) * t, None), S, x, unroll=2)[0]), F)
    add("grad scan length", jax.grad(lambda x: jnp.sum(lax.scan(
        lambda c, _: (jnp.sin(c), c), x, length=3)[1])), F)
    add("grad scan matrix", jax.grad(lambda w: jnp.sum(lax.scan(
        lambda c, t: (jnp.tanh(w @ c + t), None), F, M.T)[0])), np.eye(3, dtype=np.float32))
    add("vmap scan xs", jax.vmap(lambda x: lax.scan(step, S, x)), M)
    add("vmap scan carry", jax.vmap(lambda c: lax.scan(step, c, F)), F)
    add("vmap grad scan", jax.vmap(jax.grad(loss)), M)
    add("grad fori traced", lambda n, x: jax.grad(
        lambda x: lax.fori_loop(0, n, lambda i, c: jnp.sin(c) * i, x))(x), np.int32(3), S)
    add("jvp fori", lambda x, t: jax.jvp(
        lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * i, x), (x,), (t,)), S, S)
    add("vmap fori", jax.vmap(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, x)), F)
    add("vmap fori traced", jax.vmap(lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2, x)),
        N, F)
    add("jvp while", lambda x, t: jax.jvp(lambda x: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x)), (x,), (t,)), S, S)
    add("vmap while batched predicate", jax.vmap(lambda x: lax.while_loop(
        lambda c: c < 3.0, lambda c: c * 2, x)), F)
    add("vmap while pytree", jax.vmap(lambda n, x: lax.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2), (0, x))), N, F)
    add("grad map", jax.grad(lambda x: jnp.sum(lax.map(jnp.sin, x))), F)
    add("vmap map", jax.vmap(lambda x: lax.map(jnp.sin, x)), M)
    add("grad map batch_size", jax.grad(lambda x: jnp.sum(lax.map(jnp.sin, x, batch_size=2))),
        np.arange(4.0, dtype=np.float32))
    add("map batch_size remainder", lambda x: lax.map(jnp.sin, x, batch_size=2), F)
    add("map batch_size over length", lambda x: lax.map(jnp.sin, x, batch_size=4), F)
    add("grad cond operand", jax.grad(lambda x, y: lax.cond(
        x > 0, lambda a, b: a * b, lambda a, b: a + b, x, y), argnums=(0, 1)), S, S)
    add("value_and_grad cond", jax.value_and_grad(lambda x: jnp.sum(lax.cond(
        x[0] > 0, jnp.sin, jnp.cos, x))), F)
    add("grad switch", jax.grad(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tan], x),
                                argnums=1), np.int32(1), S)
    add("jvp cond", lambda x, t: jax.jvp(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x),
                                         (x,), (t,)), S, S)
    add("vmap switch", jax.vmap(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos], x)), N, F)
    add("vmap cond unbatched predicate", jax.vmap(
        lambda x: lax.cond(S > 0, jnp.sin, jnp.cos, x)), F)
    add("vmap grad cond", jax.vmap(jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))), F)
    add("grad checkpoint scan body", jax.grad(lambda x: lax.scan(
        jax.checkpoint(lambda c, t: (jnp.sin(c) * t, None)), S, x)[0]), F)
    add("grad checkpoint scan body passing carry on", jax.grad(lambda x: jnp.sum(lax.scan(
        jax.checkpoint(lambda c, t: (c, jnp.sin(c) * t)), S, x)[1])), F)
    add("grad checkpoint scan body with a constant output", jax.grad(lambda x: jnp.sum(
        lax.scan(jax.checkpoint(lambda c, t: (jnp.sin(c) * t, (2.0, c))), S, x)[1][1])), F)
    add("checkpoint scan", jax.checkpoint(lambda x: lax.scan(step, S, x)), F)


def _per_member(lax) -> dict:
    """Per-member programs over the axis 'i', each on a member's f32[8,4] block.
    (pbroadcast, whose vmap rule fails in JAX, and ragged_all_to_all, which JAX's
    vmap refuses over its own axis, are not vmapped.)"""
    ring = [(j, (j + 1) % MEMBERS) for j in range(MEMBERS)]
    return {
        "psum": lambda x: lax.psum(x, "i"),
        "pmax": lambda x: lax.pmax(x, "i"),
        "pmin": lambda x: lax.pmin(x, "i"),
        "pmean": lambda x: lax.pmean(x, "i"),
        "psum(1)": lambda x: x * lax.psum(1, "i"),
        "psum(1.0)": lambda x: x + lax.psum(1.0, "i"),
        "all_gather": lambda x: lax.all_gather(x, "i"),
        "all_gather axis=1": lambda x: lax.all_gather(x, "i", axis=1),
        "all_gather tiled": lambda x: lax.all_gather(x, "i", tiled=True),
        "psum_scatter": lambda x: lax.psum_scatter(x, "i"),
        "psum_scatter tiled": lambda x: lax.psum_scatter(x, "i", tiled=True),
        "all_to_all": lambda x: lax.all_to_all(x, "i", 0, 1),
        "all_to_all tiled": lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True),
        "pswapaxes": lambda x: lax.pswapaxes(x, "i", 0),
        "ppermute": lambda x: lax.ppermute(x, "i", ring),
        "pshuffle": lambda x: lax.pshuffle(x, "i", [(j + 3) % MEMBERS for j in range(MEMBERS)]),
        "axis_index": lambda x: x * lax.axis_index("i"),
        "pbroadcast": lambda x: lax.pbroadcast(x, "i", 2),
        "ragged_all_to_all": lambda x: lax.ragged_all_to_all(
            x, x * 0, *(np.arange(MEMBERS, dtype=np.int32) // 8,) * 4, axis_name="i"),
    }


def _collective_cases(jax, lax, add) -> None:
    """Each collective under vmap with an axis name, and, given 8 devices, under pmap
    and a shard_map (with and without check_vma) of a mesh of the 8. (Differentiated,
    only under vmap: under shard_map and pmap JAX's transposes are typed and its seed
    resharded, where plax's are per-device adjoints.)"""
    stacked = np.stack([BLOCK + j for j in range(MEMBERS)])
    for name, f in _per_member(lax).items():
        if name not in ("pbroadcast", "ragged_all_to_all"):
            add(f"vmap {name}", jax.vmap(f, axis_name="i"), stacked)
    for name in ("psum", "all_gather", "psum_scatter tiled", "all_to_all tiled", "ppermute"):
        f = _per_member(lax)[name]
        add(f"grad vmap {name}", jax.grad(lambda x, f=f: jax.vmap(f, axis_name="i")(x).sum()),
            stacked)
    add("vmap psum(1.0) alone", jax.vmap(lambda v: lax.psum(1.0, "i"), axis_name="i"), F)
    add("vmap psum unmapped", jax.vmap(lambda v, s: v * lax.psum(s, "i"), (0, None),
                                       axis_name="i"), stacked, S)
    if jax.device_count() < MEMBERS:
        return
    P = jax.sharding.PartitionSpec
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:MEMBERS]), ("i",))
    grid = jax.sharding.Mesh(np.array(jax.devices()[:MEMBERS]).reshape(2, 4), ("x", "y"))
    for name, f in _per_member(lax).items():
        add(f"pmap {name}", jax.pmap(f, axis_name="i"), stacked)
        for check in (True, False):
            add(f"shard_map {name}" + ("" if check else " unchecked"),
                jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                              check_vma=check), stacked.reshape(-1, 4))
    add("shard_map all_gather invarying",
        jax.shard_map(lambda x: lax.all_gather(x, "i", to="invarying"), mesh=mesh,
                      in_specs=P("i"), out_specs=P()), stacked.reshape(-1, 4))
    add("shard_map pcast", jax.shard_map(lambda x, s: x * lax.pcast(s, "i", to="varying"),
                                         mesh=mesh, in_specs=(P("i"), P()), out_specs=P("i")),
        stacked.reshape(-1, 4), S)
    both = ("x", "y")
    add("shard_map over two axes", jax.shard_map(
        lambda x: (lax.psum(x, both), lax.axis_index(both) * x, lax.all_gather(x, both),
                   lax.psum_scatter(x, both, tiled=True), lax.all_to_all(x, both, 0, 0)),
        mesh=grid, in_specs=P(both), out_specs=P(both)), stacked.reshape(-1, 4))
    # Over Explicit axes a shard_map's results are typed split as its out_specs say, and
    # the blocks of a partially manual one as their other (Explicit) axes split them.
    explicit = (jax.sharding.AxisType.Explicit,) * 2
    pair = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("i",), axis_types=explicit[:1])
    tiles = jax.sharding.Mesh(np.array(jax.devices()[:MEMBERS]).reshape(2, 4), ("x", "y"),
                              axis_types=explicit)
    NS = jax.sharding.NamedSharding
    add("shard_map explicit", jax.shard_map(lambda x, s: x * s, mesh=pair, in_specs=(P("i"), P()),
                                            out_specs=P("i")),
        jax.device_put(np.arange(6, dtype=np.float32), NS(pair, P("i"))), F)
    add("shard_map explicit partially manual", jax.shard_map(
        lambda x: x * 2, mesh=tiles, in_specs=P("x"), out_specs=P("x"), axis_names={"x"}),
        jax.device_put(stacked.reshape(-1, 4).T, NS(tiles, P("x", "y"))))
    halves = [[0, 2, 4, 6], [1, 3, 5, 7]]
    add("pmap grouped collectives", jax.pmap(lambda x: (
        lax.all_gather(x, "i", axis_index_groups=halves),
        lax.psum_scatter(x, "i", axis_index_groups=halves, tiled=True),
        lax.all_to_all(x, "i", 0, 1, axis_index_groups=halves, tiled=True)), "i"), stacked)
