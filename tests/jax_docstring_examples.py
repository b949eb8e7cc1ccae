"""Runs the examples of JAX's own docstrings (or of a library built on JAX:
tests/ecosystem/docstring_examples.py) and records what each one prints.

    python tests/jax_docstring_examples.py collect EXAMPLES.json   (with JAX itself)
    python tests/jax_docstring_examples.py collect EXAMPLES.json PACKAGE [SETUP]
    python tests/jax_docstring_examples.py run EXAMPLES.json OUT.json
    python tests/jax_docstring_examples.py record   (with JAX itself, in an empty folder)

`collect` reads the docstrings of JAX's public modules, whose examples are their
`>>>` ones, or of PACKAGE's (see `collect`), with JAX the real one; `run` executes
them, each docstring in a fresh namespace holding `jax`, `jnp`, `lax` and `np`, as
JAX's doctest setup does, and what SETUP imports, under whichever `jax` the
interpreter imports: JAX, or plax through the opt-in alias (`PLAX_AS_JAX=1`). An
example's record is what it prints (its value's repr, as a doctest shows it), or,
when it raises, the exception's class after `!! `; the messages are left out, since
plax's name more (the function, the argument) than JAX's, and so are memory
addresses. `side_by_side` runs a collection under both at once.

`record` writes RECORD: JAX's examples with what JAX prints for each, which the pinned
JAX's docstrings and outputs make a fixed answer. tests/test_jax_docstrings_vs_jax.py
runs plax against it, and reruns a sample under JAX to check it is still JAX's.
"""
from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import inspect
import io
import json
import os
import pkgutil
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from suite_flags import XLA_FLAGS

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
JAX_SETUP = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\nimport numpy as np"
SECONDS_PER_DOCSTRING = 60
RECORD = Path(__file__).with_name("recorded") / "jax_docstring_examples.json"
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_FENCED = re.compile(r"```python\n(.*?)```", re.S)


def public_modules(package: str) -> list[str]:
    """The package and its importable submodules whose names have no private part
    (`_src`, `_utils`) and are not tests, and the package's modules these hold under
    a public name (optax.experimental.aggregating, for optax.experimental._aggregating),
    outermost first."""
    found = {package}
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}.", onerror=lambda _: None):
        parts = info.name.split(".")
        if any(p.startswith("_") or "test" in p for p in parts):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - needs what is not installed (torch, tensorflow)
            continue
        found.add(info.name)
    for name in list(found):
        found.update(f"{name}.{attr}" for attr, value in vars(_module(name)).items()
                     if inspect.ismodule(value) and attr[0] != "_"
                     and value.__name__.split(".")[0] == package)
    return sorted(found, key=lambda name: (name.count("."), name))


def _module(name: str):
    """The module by its name, or by the public name a package gives it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        parent, _, attr = name.rpartition(".")
        return getattr(_module(parent), attr)


def _foreign(obj, owner: str) -> bool:
    """Whether `obj` says it is defined outside the package `owner` (a function of JAX's
    that a library re-exports, or sets as a default, as GRUCell's `jnp.tanh`)."""
    home = getattr(obj, "__module__", None)
    return isinstance(home, str) and home.split(".")[0] != owner


def _documented(module_name: str, owner: str | None) -> list[tuple[str, object, str]]:
    """The module's public names, and their classes' public methods, by qualified name,
    with the module each is defined in; with `owner`, also the module itself, and only
    the objects defined in that package (not, say, JAX's functions a library
    re-exports)."""
    module = _module(module_name)
    found = [(module_name, module, module.__name__)] if owner else []
    names = set(getattr(module, "__all__", None) or ())
    if owner or not names:
        names.update(n for n in dir(module) if n[0] != "_")
    for name in sorted(names):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj):
            continue
        if owner and _foreign(obj, owner):
            continue
        home = getattr(obj, "__module__", None)
        home = home if isinstance(home, str) else module.__name__
        qualified = f"{module_name}.{name}"
        found.append((qualified, obj, home))
        if inspect.isclass(obj):
            found += [(f"{qualified}.{attr}", member, home) for attr, member in vars(obj).items()
                      if (attr[0] != "_" or attr == "__call__")
                      and not (owner and _foreign(member, owner))]
    return found


def collect(modules: list[str] = MODULES, owner: str | None = None,
            setup: str = JAX_SETUP) -> dict:
    """Every docstring with examples (see `_examples`) in the modules' public names
    (see `_documented`), once (a function exported under several names keeps its
    first), as {"setup": setup, "docstrings": [{"name", "examples": [source, ...]}]}.
    A library's docstrings (with `owner`) name the module whose globals their examples
    see, as in `doctest` ("globals"); JAX's see the setup's names only, as in JAX's
    doctests."""
    seen, docstrings = set(), []
    for module_name in modules:
        for name, obj, home in _documented(module_name, owner):
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or doc in seen:
                continue
            examples = _examples(doc, fenced=bool(owner))
            if ">>>" not in doc and not examples:
                continue
            seen.add(doc)
            docstrings.append({"name": name, "examples": examples}
                              | ({"globals": home} if owner else {}))
    return {"setup": setup, "docstrings": docstrings}


def _examples(doc: str, fenced: bool) -> list[str]:
    """The sources of the docstring's `>>>` examples, but those marked `+SKIP`; with
    `fenced`, then each top-level statement of its ```python blocks that hold no `>>>`
    (equinox writes its examples so), leaving out blocks that do not parse."""
    found = [e.source for e in doctest.DocTestParser().get_examples(doc)
             if not e.options.get(doctest.SKIP)]
    for block in _FENCED.findall(doc) if fenced else ():
        block = textwrap.dedent(block)
        try:
            statements = [] if ">>>" in block else ast.parse(block).body
        except SyntaxError:
            continue
        lines = block.splitlines()
        found += ["\n".join(lines[_first_line(s) - 1:s.end_lineno]) + "\n" for s in statements]
    return found


def _first_line(statement: ast.stmt) -> int:
    """Where the statement starts: at its first decorator, if it has one."""
    return min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])


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


def run(collection: dict) -> dict[str, list[str]]:
    """Each docstring's examples, in order, in a namespace of its own."""
    signal.signal(signal.SIGALRM, _give_up)
    results = {}
    for docstring in collection["docstrings"]:
        home = docstring.get("globals")
        namespace = dict(vars(importlib.import_module(home))) if home else {}
        exec(collection["setup"], namespace)
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


def record(path: Path = RECORD) -> None:
    """JAX's collection (see `collect`), each docstring with what its examples print
    under JAX ("printed", see `run`) with the suite's XLA flags, and JAX's version,
    written to `path`."""
    os.environ["XLA_FLAGS"] = XLA_FLAGS  # before JAX starts its CPU client
    import jax
    assert "plax_as_jax" not in sys.modules, "record under JAX itself, not the alias"
    collection = collect()
    for docstring, printed in zip(collection["docstrings"], run(collection).values()):
        docstring["printed"] = printed
    header = {"jax": jax.__version__, "xla_flags": XLA_FLAGS}
    path.write_text(json.dumps(header | collection, indent=1) + "\n")


def runner(folder: str, *args: str, alias: bool, xla_flags: str | None = None,
           ) -> subprocess.Popen:
    """This file as a program, in `folder` (examples write files, e.g. `jnp.save`'s),
    with `jax` being JAX, or plax through the alias, and XLA's flags `xla_flags` if
    given (else the environment's)."""
    env = {k: v for k, v in os.environ.items() if k != "PLAX_AS_JAX"}
    env.update(JAX_PLATFORMS="cpu", PLAX_AS_JAX="1" if alias else "0")
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    return subprocess.Popen([sys.executable, __file__, *args], env=env, cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, timeout: float) -> None:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:]


def side_by_side(examples: str, folder: str, timeout: float = 900,
                 ) -> dict[str, tuple[list[str], list[str]]]:
    """{name: (JAX's records, plax's records)} of the collection in the file `examples`,
    run under both at once, each in a folder of its own under `folder`."""
    examples, folder, runs = os.path.abspath(examples), os.path.abspath(folder), {}
    for library in ("jax", "plax"):
        os.mkdir(where := os.path.join(folder, library))
        runs[library] = runner(where, "run", examples, os.path.join(where, "out.json"),
                               alias=library == "plax")
    for proc in runs.values():
        finish(proc, timeout)
    theirs, ours = (json.loads(Path(folder, library, "out.json").read_text())
                    for library in runs)
    return {name: (records, ours[name]) for name, records in theirs.items()}


if __name__ == "__main__":
    command, *paths = sys.argv[1:]
    if command == "record":
        record()
        sys.exit()
    examples_path, *more = paths
    if command == "collect":  # JAX's, or with `PACKAGE [SETUP]`, a library's
        collection = collect() if not more else collect(
            public_modules(more[0]), more[0], "\n".join([JAX_SETUP, *more[1:]]))
        with open(examples_path, "w") as f:
            json.dump(collection, f)
    else:
        with open(examples_path) as f:
            collection = json.load(f)
        with open(sys.argv[3], "w") as f:
            json.dump(run(collection), f)
