"""Runs the `>>>` examples of JAX's own docstrings and records what each one prints.

    python tests/jax_docstring_examples.py collect EXAMPLES.json   (with JAX itself)
    python tests/jax_docstring_examples.py run EXAMPLES.json OUT.json

`collect` reads the docstrings of JAX's public modules (JAX must be the real one);
`run` executes them, each docstring in a fresh namespace holding `jax`, `jnp`, `lax`
and `np` as JAX's doctest setup does, under whichever `jax` the interpreter imports:
JAX, or plax through the opt-in alias (`PLAX_AS_JAX=1`). An example's record is
what it prints (its value's repr, as a doctest shows it), or, when it raises, the
exception's class after `!! `; the messages are left out, since plax's name more
(the function, the argument) than JAX's.
"""
from __future__ import annotations

import contextlib
import doctest
import importlib
import inspect
import io
import json
import re
import signal
import sys

# The modules JAX's API reference documents, whose public names' docstrings (and
# their classes' methods') hold the examples.
MODULES = [
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.random",
    "jax.nn", "jax.nn.initializers", "jax.tree_util", "jax.tree", "jax.sharding",
    "jax.experimental", "jax.experimental.checkify", "jax.experimental.multihost_utils",
    "jax.flatten_util", "jax.debug", "jax.dtypes", "jax.stages", "jax.ops", "jax.image",
    "jax.custom_derivatives", "jax.ad_checkpoint", "jax.export", "jax.ffi",
    "jax.experimental.pallas", "jax.profiler", "jax.errors", "jax.test_util",
    "jax.scipy.special", "jax.scipy.stats", "jax.scipy.linalg", "jax.scipy.signal",
    "jax.scipy.fft", "jax.scipy.integrate", "jax.scipy.interpolate", "jax.scipy.ndimage",
    "jax.scipy.optimize", "jax.scipy.cluster.vq", "jax.scipy.spatial.transform",
    "jax.scipy.sparse.linalg",
    *(f"jax.scipy.stats.{name}" for name in (
        "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon",
        "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic",
        "multinomial", "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t",
        "truncnorm", "uniform", "vonmises", "wrapcauchy")),
]
SECONDS_PER_DOCSTRING = 60
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _documented(module) -> list[tuple[str, object]]:
    """The module's public names, and their classes' public methods, by qualified name."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if n[0] != "_"]
    found = []
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj):
            continue
        qualified = f"{module.__name__}.{name}"
        found.append((qualified, obj))
        if inspect.isclass(obj):
            found += [(f"{qualified}.{attr}", member) for attr, member in vars(obj).items()
                      if attr[0] != "_" or attr == "__call__"]
    return found


def collect() -> list[dict]:
    """Every docstring with examples, once (a function exported under several names
    keeps its first), as {"name", "examples": [source, ...]}; examples marked
    `+SKIP` are left out."""
    seen, docstrings = set(), []
    for module_name in MODULES:
        for name, obj in _documented(importlib.import_module(module_name)):
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or ">>>" not in doc or doc in seen:
                continue
            seen.add(doc)
            examples = [e.source for e in doctest.DocTestParser().get_examples(doc)
                        if not e.options.get(doctest.SKIP)]
            docstrings.append({"name": name, "examples": examples})
    return docstrings


class _Timeout(BaseException):
    pass


def _give_up(*_):
    raise _Timeout


def _run_example(source: str, namespace: dict) -> str:
    """What the example prints (a value's repr, as a doctest shows it), or `!! Class`."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "<doctest>", "single"), namespace)
    except Exception as e:  # noqa: BLE001 - the exception is the example's result
        return out.getvalue() + f"!! {type(e).__name__}"
    return _ADDRESS.sub(" at 0x...", out.getvalue())


def run(docstrings: list[dict]) -> dict[str, list[str]]:
    """Each docstring's examples, in order, in a namespace of its own."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    signal.signal(signal.SIGALRM, _give_up)
    results = {}
    for docstring in docstrings:
        namespace = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
        printed = []
        signal.alarm(SECONDS_PER_DOCSTRING)
        try:
            for source in docstring["examples"]:
                printed.append(_run_example(source, namespace))
        except _Timeout:
            printed.append(f"!! timed out after {SECONDS_PER_DOCSTRING} s")
        finally:
            signal.alarm(0)
        results[docstring["name"]] = printed
    return results


if __name__ == "__main__":
    command, examples_path = sys.argv[1:3]
    if command == "collect":
        with open(examples_path, "w") as f:
            json.dump(collect(), f)
    else:
        with open(examples_path) as f:
            docstrings = json.load(f)
        with open(sys.argv[3], "w") as f:
            json.dump(run(docstrings), f)
