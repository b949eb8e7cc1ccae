"""plax's TPU backend: libtpu's PJRT runtime.

Its `runtime` extra (`pip install "./plugins/tpu[runtime]"` in a plax checkout, or
`pip install "libtpu==0.0.42.*"` beside the installed plugin) brings libtpu.
`TPU_LIBRARY_PATH` overrides the library's location, as with JAX.

libtpu reads its slice's shape from the environment and, where a variable is missing,
asks the cloud metadata server, retrying each for minutes. A host with no TPU attached
(a laptop or CI compiling for a TPU topology ahead of time) has no such server, so
`_prepare_environment` tells libtpu to skip it before the library is loaded, as JAX's
start-up does, and lets other processes load libtpu beside this one (its lock file
guards a chip there is none of); such a host gets no `tpu` client at all, quietly,
without loading libtpu (`PLAX_FORCE_TPU_INIT=1` tries anyway).
"""
from __future__ import annotations

import glob
import os

from jaxlib import xla_client as xc

from plax.version import __version__
from plax_runtime import pjrt_plugins
from plax_runtime.backends import BackendPlugin, BackendUnavailableError

_GOOGLE_PCI_VENDOR = "0x1ae0"
# PCI device ids of TPU chips (v3, v4, v5p, v5e, v6e, 7x and one unnamed kind).
_TPU_PCI_DEVICES = frozenset({"0x0027", "0x0056", "0x005e", "0x0062", "0x0063", "0x006f",
                              "0x0076"})


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def attached_chips() -> int:
    """How many TPU chips this host sees: on the PCI bus, or (in sandboxes that hide
    the bus) as TPU device files."""
    on_bus = sum(_read(os.path.join(os.path.dirname(vendor), "device")) in _TPU_PCI_DEVICES
                 for vendor in glob.glob("/sys/bus/pci/devices/*/vendor")
                 if _read(vendor) == _GOOGLE_PCI_VENDOR)
    return on_bus or len(glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*"))


def _force_init() -> bool:
    return any(os.environ.get(v) for v in ("PLAX_FORCE_TPU_INIT", "JAX_FORCE_TPU_INIT"))


def _prepare_environment() -> None:
    """What libtpu must find in the environment before it is loaded (a variable the
    user set is kept)."""
    if not attached_chips():
        os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
        # libtpu's lock file guards a chip; with none, it would only keep a second
        # process (a test's JAX reference, another compiling worker) from compiling
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
        return
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    os.environ.setdefault("TPU_ML_PLATFORM", "plax")
    os.environ.setdefault("TPU_ML_PLATFORM_VERSION", __version__)
    launch_barrier = "--xla_tpu_use_enhanced_launch_barrier"
    init_args = os.environ.get("LIBTPU_INIT_ARGS", "")
    if launch_barrier not in init_args:
        os.environ["LIBTPU_INIT_ARGS"] = f"{init_args} {launch_barrier}=true".strip()


def _library() -> str:
    path = os.environ.get("TPU_LIBRARY_PATH")
    if path and os.path.isfile(path):
        return path
    return pjrt_plugins.package_file("libtpu", "libtpu.so",
                                     install=pjrt_plugins.runtime_install("plax-tpu"))


def make_tpu_client() -> xc.Client:
    library = _library()
    if not attached_chips() and not _force_init():
        raise BackendUnavailableError(
            "no TPU chip is attached to this host (libtpu is installed, so programs can "
            "be compiled for TPU topologies ahead of time; PLAX_FORCE_TPU_INIT=1 starts "
            "the client anyway)")
    _prepare_environment()
    return pjrt_plugins.make_c_api_client("tpu", library)


def make_tpu_topology(topology_name: str = "", **options) -> xc.DeviceTopology:
    """A TPU slice described by name (`"v5e:2x2"`...) without being attached to it:
    libtpu compiles for its devices ahead of time."""
    library = _library()
    _prepare_environment()
    pjrt_plugins.load_plugin("tpu", library)
    return xc.make_tfrt_tpu_c_api_device_topology(topology_name, **options)


backend = BackendPlugin(platform="tpu", make_client=make_tpu_client, priority=300,
                        package="plax-tpu", make_topology=make_tpu_topology)
