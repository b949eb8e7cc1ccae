"""What plax tells a user to install names things that exist: plax's distributions by
the folder they are built from (no package index has them), a plugin's PJRT runtime by
the requirement of its `runtime` extra, and no package at all for a platform plax has
no backend for."""
import re
import sys

import pytest
from workspace_layout import ROOT, member_by_name, members

import plax
from plax._src import plugins


def test_rocm_lists_the_backends_instead_of_naming_an_installed_package():
    with pytest.raises(RuntimeError) as info:
        plax.devices("rocm")
    message = str(info.value)
    assert "plax's backends are 'cpu', 'cuda' (also 'gpu') and 'tpu'" in message
    assert "install" not in message


@pytest.mark.parametrize("plugin,runtime_module,distribution", [
    ("plax_cuda12", "jax_plugins.xla_cuda12", "plax-cuda12"),
    ("plax_tpu", "libtpu", "plax-tpu")])
def test_a_missing_runtime_names_the_plugins_runtime_extra(monkeypatch, plugin, runtime_module,
                                                           distribution):
    import importlib
    from plax_runtime.backends import BackendUnavailableError
    (runtime,) = member_by_name()[distribution].extras["runtime"]
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    monkeypatch.setitem(sys.modules, runtime_module, None)  # as if it were not installed
    with pytest.raises(BackendUnavailableError) as info:
        importlib.import_module(plugin)._library()
    message = str(info.value)
    assert f'pip install "{runtime.name}{runtime.specifier}"' in message, message
    assert f"the runtime extra of {distribution}" in message
    assert f"{distribution}[runtime]" not in message  # a distribution no index has


def test_provider_hints_name_member_distributions_and_their_folders():
    paths = {m.name: m.path for m in members()}
    named = {*plugins._NAMED_PROVIDERS.values(), *plugins._PROVIDERS.values(),
             *plugins._DEFAULT_PROVIDER.values()}
    assert named <= set(plugins._FOLDERS) and set(plugins._FOLDERS) <= set(paths)
    for distribution, folder in plugins._FOLDERS.items():
        assert paths[distribution] == folder and (ROOT / folder / "pyproject.toml").is_file()
    with pytest.raises(plugins.PluginMissingError,
                       match=r"install 'plax-transforms' \(its wheel, or `pip install "
                             r"\./transforms` in a plax checkout\)"):
        plugins.resolve("plax.transforms", "not_a_plax_function")


@pytest.mark.parametrize("readme", ["plugins/cuda/README.md", "plugins/tpu/README.md",
                                    "README.md"])
def test_readme_pip_installs_name_things_that_exist(readme):
    text = (ROOT / readme).read_text()
    wheels = {f"{m.name.replace('-', '_')}-{m.version}-py3-none-any.whl" for m in members()}
    runtimes = {f"{r.name}{r.specifier}" for m in members()
                for r in m.extras.get("runtime", [])}
    shown = re.findall(r'pip install\s+((?:"[^"]+"|[^\s`"]+)(?:\s+"[^"]+")*)', text)
    assert shown
    for args in shown:
        for arg in re.findall(r'"([^"]+)"|(\S+)', args):
            arg = arg[0] or arg[1]
            base = arg.split("[")[0]
            if base.startswith("./"):
                assert (ROOT / base).is_dir(), arg
            elif base.startswith("dist/"):
                assert base == "dist/*.whl" or base.removeprefix("dist/") in wheels, arg
            elif base not in ("-r", "-q", "-e", "requirements-dev.txt"):
                assert arg in runtimes, arg
