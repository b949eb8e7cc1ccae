"""The parameters of JAX's public functions that plax's lack: JAX's signatures read in
a subprocess, plax's here. A gap not in `KNOWN_GAPS` fails the test (a parameter
JAX added, or one plax lost), and so does an entry there that is no longer a gap."""
import inspect

from jax_reference import requires_jax, run_reference

MODULES = ["", ".numpy", ".lax", ".random", ".nn", ".scipy.special", ".scipy.signal", ".tree_util"]

_NOT_YET = "not implemented in plax yet"
KNOWN_GAPS = {
    "jax.Ref": ({"aval", "refs"}, "built by plax.new_ref, whose own constructor differs"),
    "jax.Shard": ({"sharding", "global_shape"},
                  "built by the runtime (from index and replica_id), not by users"),
    "jax.ShapeDtypeStruct": ({"is_ref"}, "ref-typed structs are " + _NOT_YET),
    "jax.checkpoint": ({"concrete"}, "removed in JAX: it raises NotImplementedError"),
    "jax.remat": ({"concrete"}, "removed in JAX: it raises NotImplementedError"),
    "jax.vjp": ({"reduce_axes"}, "deprecated in JAX: it raises NotImplementedError"),
    "jax.local_devices": ({"host_id"}, "deprecated in JAX (renamed process_index)"),
    "jax.device_put": ({"src"}, _NOT_YET),
    "jax.disable_jit": ({"disable"}, "a config context manager in plax, taking new_val"),
}


def _signatures(root, modules):
    """{module suffix: {public callable: [(parameter, kind name)]}} of `root`."""
    import importlib
    import inspect
    import warnings
    out = {}
    for suffix in modules:
        module = importlib.import_module(root + suffix)
        names = {}
        for name in dir(module):
            if name.startswith("_"):
                continue
            with warnings.catch_warnings():  # deprecated names warn when read
                warnings.simplefilter("ignore")
                obj = getattr(module, name, None)
            if not callable(obj) or inspect.ismodule(obj):
                continue
            try:
                sig = inspect.signature(obj)
            except (TypeError, ValueError):
                continue
            names[name] = [(p.name, p.kind.name) for p in sig.parameters.values()]
        out[suffix] = names
    return out


def _missing(jax_params, plax_params) -> set:
    """JAX's parameters that plax's signature cannot take: by name, except that a
    positional-only one (whose name is no part of the API) needs only a slot."""
    names = {n for n, _ in plax_params}
    slots = sum(k in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") for _, k in plax_params)
    var_args = any(k == "VAR_POSITIONAL" for _, k in plax_params)
    missing = set()
    for i, (name, kind) in enumerate(jax_params):
        if kind in ("VAR_POSITIONAL", "VAR_KEYWORD") or name.startswith("_") or name in names:
            continue
        if kind == "POSITIONAL_ONLY" and (i < slots or var_args):
            continue
        missing.add(name)
    return missing


@requires_jax
def test_no_new_signature_gaps():
    code = inspect.getsource(_signatures) + f"\nresult = _signatures('jax', {MODULES!r})\n"
    theirs = run_reference(code)
    ours = _signatures("plax", MODULES)
    gaps = {}
    for suffix, functions in theirs.items():
        for name, params in functions.items():
            if name in ours[suffix]:
                missing = _missing(params, ours[suffix][name])
                if missing:
                    gaps[f"jax{suffix}.{name}"] = missing
    known = {name: params for name, (params, _) in KNOWN_GAPS.items()}
    new = {k: sorted(v - known.get(k, set())) for k, v in gaps.items() if v - known.get(k, set())}
    closed = {k: sorted(v - gaps.get(k, set())) for k, v in known.items()
              if v - gaps.get(k, set())}
    assert not new, f"parameters JAX has and plax lacks: {new}"
    assert not closed, f"KNOWN_GAPS entries that are gaps no more (remove them): {closed}"
