"""The plugin registry: how packages join plax through entry points.

The kernel knows no particular transform, primitive or backend. Packages announce
what they provide in seven entry-point groups (DESIGN.md §3), each read lazily, once:

* `plax.transforms`: names the facade `plax.<name>` resolves (`jit`, `grad`, `Array`...);
* `plax.modules`: public modules of the facade, `plax.<module>` (`numpy`, `lax`...),
  importable as `import plax.numpy`;
* `plax.names`: names packages contribute to a public module that several of them
  fill, as `<module>.<name>` (`debug.visualize_array_sharding` is
  `plax.debug.visualize_array_sharding`; `lax.with_sharding_constraint` joins
  `plax.lax`); see `contributed`;
* `plax.interpreters`: what the kernel's extension API delegates to (eager
  dispatch, the Jaxpr-to-Jaxpr transformations, the array methods), see `SEAMS`;
* `plax.primitives`: modules that define primitives with their rules;
* `plax.lowering`: modules that add platform-specific lowering rules;
* `plax.backends`: PJRT backends.

Loading an entry point checks that its distribution was built for this version of
the kernel and that it yields the right kind of object. A plugin that fails is
reported with a warning naming its distribution and skipped; it never takes the
other plugins down.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.metadata as metadata
import importlib.util
import sys
import threading
import types
import warnings
from typing import Any, Callable

GROUPS = ("plax.transforms", "plax.modules", "plax.names", "plax.interpreters",
          "plax.primitives", "plax.lowering", "plax.backends")
"""The entry-point groups packages join plax through (see the module docstring)."""

SEAMS: dict[str, tuple[str, str]] = {
    "eager_dispatch": ("callable", "plax-transforms"),
    "array_methods": ("module", "plax-stdlib"),
    "lax": ("module", "plax-stdlib"),
    "jvp_jaxpr": ("callable", "plax-transforms"),
    "partial_eval_jaxpr": ("callable", "plax-transforms"),
    "transpose_jaxpr": ("callable", "plax-transforms"),
    "batch_jaxpr": ("callable", "plax-transforms"),
    "sharding_from_spec": ("callable", "plax-sharding"),
    "sharding_rule": ("callable", "plax-sharding"),
    "unsharded_type": ("callable", "plax-sharding"),
    "traced_device_put": ("callable", "plax-sharding"),
    "implicit_device_put": ("callable", "plax-runtime"),
}
"""The seams by which the kernel calls up into other layers: `plax.interpreters` entry
point names, what each must be (a module or a callable), and which distribution
provides it."""

# What each group's entry points must load to (groups not listed: anything).
_KIND_OF_GROUP = {"plax.modules": "module", "plax.primitives": "module",
                  "plax.lowering": "module"}  # plax.backends: checked by the runtime

# Which distribution provides what, for errors that tell the user what to install.
_PROVIDERS = {"plax.transforms": "plax-transforms", "plax.lowering": "plax-transforms",
              "plax.primitives": "plax-stdlib"}
_NAMED_PROVIDERS = {
    ("plax.modules", "numpy"): "plax-stdlib", ("plax.modules", "lax"): "plax-stdlib",
    ("plax.modules", "nn"): "plax-stdlib", ("plax.modules", "scipy"): "plax-stdlib",
    ("plax.modules", "ops"): "plax-stdlib", ("plax.modules", "image"): "plax-stdlib",
    ("plax.modules", "typing"): "plax-runtime", ("plax.modules", "memory"): "plax-runtime",
    ("plax.modules", "dlpack"): "plax-runtime", ("plax.modules", "sharding"): "plax-sharding",
    ("plax.modules", "profiler"): "plax-runtime",
    ("plax.modules", "experimental.compilation_cache"): "plax-runtime",
    ("plax.modules", "experimental.pallas"): "plax-pallas",
    ("plax.names", "lax.with_sharding_constraint"): "plax-sharding",
    ("plax.names", "debug.visualize_array_sharding"): "plax-sharding",
    ("plax.names", "debug.visualize_sharding"): "plax-sharding",
    ("plax.names", "debug.inspect_array_sharding"): "plax-sharding",
    **{("plax.names", name): "plax-transforms" for name in (
        "debug.print", "debug.callback", "debug.breakpoint", "debug.log", "debug.DebugEffect",
        "debug.OrderedDebugEffect", "experimental.io_callback")},
    ("plax.backends", "cuda"): "plax-cuda12", ("plax.backends", "gpu"): "plax-cuda12",
    ("plax.backends", "tpu"): "plax-tpu", ("plax.backends", "cpu"): "plax-runtime",
    **{("plax.interpreters", name): dist for name, (_, dist) in SEAMS.items()},
}
_DEFAULT_PROVIDER = {"plax.modules": "plax-transforms"}
# Where each distribution's sources are in a plax checkout (`pip install ./<folder>`).
_FOLDERS = {"plax-stdlib": "stdlib", "plax-runtime": "runtime_cpp",
            "plax-transforms": "transforms", "plax-sharding": "sharding",
            "plax-pallas": "pallas", "plax-cuda12": "plugins/cuda",
            "plax-tpu": "plugins/tpu"}
KERNEL_DISTRIBUTION = "plax"


class PluginMissingError(ImportError):
    """A name or backend is provided by a package that is not installed."""


class PluginVersionError(ImportError):
    """A plugin was built for another version of the plax kernel."""


class PluginWarning(RuntimeWarning):
    """A plugin failed to load and was skipped."""


def _is_kind(obj: Any, kind: str | None) -> bool:
    if kind == "module":
        return isinstance(obj, types.ModuleType)
    if kind == "callable":
        return callable(obj)
    return True


def _kernel_version() -> str:
    return metadata.version(KERNEL_DISTRIBUTION)


def check_version(dist: metadata.Distribution | None) -> None:
    """Raise PluginVersionError if `dist` requires a kernel version other than this one."""
    if dist is None or dist.name == KERNEL_DISTRIBUTION:
        return
    from packaging.requirements import Requirement
    version = _kernel_version()
    for text in dist.requires or ():
        req = Requirement(text)
        if req.name == KERNEL_DISTRIBUTION and req.marker is None and \
                not req.specifier.contains(version, prereleases=True):
            raise PluginVersionError(
                f"{dist.name} {dist.version} requires {req} but plax {version} is installed; "
                f"upgrade {dist.name} (or install the plax version it was built for)")


class _Group:
    """One entry-point group: its entry points by name, each loaded on first use."""

    def __init__(self, name: str):
        self.name = name
        self.entry_points = {ep.name: ep for ep in metadata.entry_points(group=name)}
        self.loaded: dict[str, Any] = {}
        self.failures: dict[str, str] = {}

    def _expected_kind(self, ep_name: str) -> str | None:
        if self.name == "plax.interpreters" and ep_name in SEAMS:
            return SEAMS[ep_name][0]
        return _KIND_OF_GROUP.get(self.name)

    def load(self, ep_name: str) -> Any:
        if ep_name in self.loaded:
            return self.loaded[ep_name]
        if ep_name in self.failures:
            raise PluginMissingError(self.failures[ep_name])
        ep = self.entry_points[ep_name]
        dist = ep.dist.name if ep.dist else "an unknown distribution"
        try:
            check_version(ep.dist)
            obj = ep.load()
            kind = self._expected_kind(ep_name)
            if not _is_kind(obj, kind):
                raise TypeError(f"the entry point must yield a {kind}, but it yields "
                                f"{type(obj).__name__} {obj!r}")
        except Exception as err:  # a broken plugin must not take the others down
            msg = (f"plax plugin {ep.name!r} ({ep.value}) of group {self.name!r} from {dist} "
                   f"failed to load: {type(err).__name__}: {err}")
            self.failures[ep_name] = msg
            warnings.warn(msg, PluginWarning, stacklevel=4)
            raise PluginMissingError(msg) from err
        self.loaded[ep_name] = obj
        return obj

    def load_all(self) -> dict[str, Any]:
        for ep_name in self.entry_points:
            try:
                self.load(ep_name)
            except PluginMissingError:
                pass
        return dict(self.loaded)


_groups: dict[str, _Group] = {}
_lock = threading.RLock()


def _group(name: str) -> _Group:
    group = _groups.get(name)  # (made once, under the lock; rules look groups up often)
    if group is None:
        with _lock:
            group = _groups.get(name) or _groups.setdefault(name, _Group(name))
    return group


def names(group: str) -> list[str]:
    """Entry point names announced in `group` (nothing is imported)."""
    return sorted(_group(group).entry_points)


def provider_hint(group: str, name: str) -> str:
    provider = _NAMED_PROVIDERS.get((group, name)) or _PROVIDERS.get(group) \
        or _DEFAULT_PROVIDER.get(group)
    if provider:
        return (f"; install {provider!r} (its wheel, or `pip install ./{_FOLDERS[provider]}` "
                "in a plax checkout)")
    if group == "plax.backends":
        return "; plax's backends are 'cpu', 'cuda' (also 'gpu') and 'tpu'"
    return ""


def resolve(group: str, name: str) -> Any:
    """The object the entry point `name` of `group` refers to, loading it once."""
    g = _group(group)
    if name not in g.entry_points:
        raise PluginMissingError(f"no plugin provides {name!r} in entry point group "
                                 f"{group!r}{provider_hint(group, name)}")
    # Loading imports modules; the import system serialises imports of one module,
    # so no lock of ours is held around it (that could deadlock with an import lock).
    return g.load(name)


def load_group(group: str) -> dict[str, Any]:
    """Load every plugin of `group` (failures are warned about and skipped)."""
    return _group(group).load_all()


def failures(group: str) -> dict[str, str]:
    """Plugins of `group` that failed to load, with the reason."""
    return dict(_group(group).failures)


def contributed(module: str, name: str) -> Any:
    """The name `name` that a package contributes to the public module `module`
    (entry point `<module>.<name>` of `plax.names`); AttributeError if none does,
    saying which package would."""
    try:
        return resolve("plax.names", f"{module}.{name}")
    except PluginMissingError as err:
        raise AttributeError(f"module 'plax.{module}' has no attribute {name!r} ({err})"
                             ) from None


def contributed_names(module: str) -> list[str]:
    """The names packages contribute to `module` (nothing is imported)."""
    prefix = module + "."
    return [n[len(prefix):] for n in names("plax.names") if n.startswith(prefix)]


def seam(name: str) -> Callable[..., Any]:
    """A function that calls the `plax.interpreters` seam `name` (declared in SEAMS),
    resolving it on first call: how the extension API delegates to the packages
    that implement it."""
    impl = None

    def call(*args, **kwargs):
        nonlocal impl
        if impl is None:
            impl = resolve("plax.interpreters", name)
        return impl(*args, **kwargs)
    return call


# --- facade modules: `import plax.numpy` -----------------------------------------------

def facade_target(fullname: str) -> tuple[str, str] | None:
    """For `plax.<name>[.sub]` announced in `plax.modules`: (entry point name, the real
    module's name); None for anything else."""
    if not fullname.startswith("plax."):
        return None
    rest = fullname[len("plax."):]
    entry_points = _group("plax.modules").entry_points
    for ep_name in sorted(entry_points, key=len, reverse=True):
        if rest == ep_name or rest.startswith(ep_name + "."):
            return ep_name, entry_points[ep_name].value + rest[len(ep_name):]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, ep_name: str, target: str):
        self.ep_name, self.target = ep_name, target

    def create_module(self, spec):
        resolve("plax.modules", self.ep_name)  # checks the version and kind, once
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class _FacadeFinder(importlib.abc.MetaPathFinder):
    """Finds `plax.<module>` for modules other packages provide: the name becomes an
    alias of the real module (`plax.numpy` is `plax_stdlib.numpy`), so each module
    exists once however it is imported."""

    def find_spec(self, fullname, path=None, target=None):
        found = facade_target(fullname)
        if found is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(*found))


def install_facade_finder() -> None:
    if not any(isinstance(f, _FacadeFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FacadeFinder())
