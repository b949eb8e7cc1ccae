"""The symbolic-dimension decisions that tests/test_export_constraints.py compares
between plax and JAX 0.10.2 (this module imports neither, so that a JAX subprocess
can evaluate the same cases)."""

# (dimension names, constraints, expressions over them): each expression's outcome (a
# value, or the exception class it raises) must be JAX's.
DECISIONS = [
    ("a, b", ["b >= 16", "a == 2*b"],
     ["b >= 16", "b >= 17", "a", "a - 2*b", "a >= 32", "a > 32", "max_dim(b, 16)",
      "min_dim(a, 40)", "a // 2", "b == 16"]),
    ("c, d", ["c >= d", "d >= 4", "c <= 100"],
     ["c >= d", "d <= c", "c >= 4", "c <= 100", "c < 101", "c >= 5", "c < 100",
      "max_dim(c, d)", "min_dim(c, d)", "max_dim(c, 200)", "min_dim(d, 3)", "c == d",
      "2*c >= d + 4", "c - d >= 0", "c // 2 >= 2", "c * d >= 16", "c % 4 <= 3"]),
    ("e", ["mod(e, 4) == 0"], ["e % 4", "(e // 4) * 4", "e // 4 >= 1", "e >= 4"]),
    ("f, g", ["f + g <= 10"], ["f <= 9", "f <= 8", "2*f <= 18", "f + g < 11", "g >= 1"]),
    ("n", ["n >= 8", "n <= 8"], ["n >= 8", "n <= 8", "n == 8", "max_dim(n, 8)"]),
    ("p, q", ["p*q >= 12"], ["p*q >= 12", "p*q > 12", "p >= 2"]),
    ("x", ["floordiv(x, 2) >= 3"], ["x // 2 >= 3", "x >= 6", "x >= 7"]),
    ("u, v", [], ["u >= v", "max_dim(u, 1)", "min_dim(u, 1)", "max_dim(u + 1, u)"]),
    # a max or min with a negative coefficient, decided by splitting its two cases
    ("w", [], ["w - max_dim(0, w - 2) >= 1", "w - max_dim(0, w - 2) >= 2",
               "min_dim(max_dim(0, w - 2), w)", "w - min_dim(5, w) >= 0",
               "max_dim(w, 4) - min_dim(w, 4) >= 0", "2*w - max_dim(w, 3) >= 1",
               "min_dim(w, 3) - w <= 0", "3 - min_dim(w, 3) > 0"]),
]

BAD_SCOPES = [["b > 3"], "b >= 3", ["3 >= 4"], ["b + c == 4"], ["b == 4", "b == 5"],
               [3], ["b >= 4", "b <= 3"]]


def outcomes(export, max_dim, min_dim) -> dict:
    """Each `DECISIONS` expression's outcome, and each bad scope's error class, with
    `export` (`plax.export` or `jax.export`) and its library's `max_dim`/`min_dim`."""
    names = {"max_dim": max_dim, "min_dim": min_dim}
    found = {}
    for spec, constraints, exprs in DECISIONS:
        dims = export.symbolic_shape(spec, constraints=constraints)
        env = dict(zip([n.strip() for n in spec.split(",")], dims), **names)
        for text in exprs:
            try:
                value = eval(text, {}, env)
                found[f"{constraints} {text}"] = str(value)
            except Exception as err:  # the class is the outcome
                found[f"{constraints} {text}"] = type(err).__name__
    for constraints in BAD_SCOPES:
        try:
            export.SymbolicScope(constraints)
            found[repr(constraints)] = "ok"
        except Exception as err:
            found[repr(constraints)] = type(err).__name__
    return found
