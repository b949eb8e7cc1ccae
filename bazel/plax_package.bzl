"""The one macro behind every plax BUILD.bazel file, so each says only what is
particular to its package; tests/test_bazel.py checks the result against the
package's pyproject.toml.

`plax_package(name = "plax_runtime", distribution = "plax-runtime", ...)` in the
package folder `runtime_cpp/` defines
  :plax_runtime  py_library of plax_runtime/**/*.py, its deps derived from `requires`
  :package       py_package of that library
  :wheel         py_wheel with the distribution's metadata and entry points
"""

load("@pypi//:requirements.bzl", "requirement")
load("@rules_python//python:defs.bzl", "py_library")
load("@rules_python//python:packaging.bzl", "py_package", "py_wheel")

# The workspace moves in lockstep: one version and one Python floor for every package.
VERSION = "0.1.0"
PYTHON_REQUIRES = ">=3.11"

# Every plax distribution and its library target. A requirement on one of them is
# a dependency on that target, pinned to VERSION; any other is a pip package.
LIBRARIES = {
    "plax": "//core:plax",
    "plax-stdlib": "//stdlib:plax_stdlib",
    "plax-runtime": "//runtime_cpp:plax_runtime",
    "plax-transforms": "//transforms:plax_transforms",
    "plax-sharding": "//sharding:plax_sharding",
    "plax-pallas": "//pallas:plax_pallas",
    "plax-cuda12": "//plugins/cuda:plax_cuda12",
    "plax-tpu": "//plugins/tpu:plax_tpu",
    "plax-as-jax": "//compat:plax_as_jax",
}

_PUBLIC = ["//visibility:public"]

def _project(text):
    """The project a requirement names, canonical: `ML_Dtypes>=0.5` → `ml-dtypes`."""
    name = text
    for separator in ["[", ";", "=", "<", ">", "!", "~", " "]:
        name = name.split(separator)[0]
    return name.lower().replace("_", "-").replace(".", "-")

def plax_package(
        name,
        distribution,
        requires = [],
        extra_requires = {},
        entry_points = {},
        data = [],
        root_files = [],
        **wheel_attrs):
    """A plax distribution whose folder holds the import package `name`.

    Args:
      name: the import package, a sub-folder of this package (`plax_runtime`).
      distribution: the distribution's name (`plax-runtime`).
      requires: pyproject.toml's `dependencies`, with sibling plax distributions
        named without a version (they are pinned to VERSION).
      extra_requires: pyproject.toml's `optional-dependencies`; not library deps.
      entry_points: `{group: ["name = module:attr", ...]}` as in pyproject.toml.
      data: extra runtime files of the library (e.g. a compiled extension).
      root_files: files the wheel holds at its root, beside the package (a start-up
        `.pth` file).
      **wheel_attrs: further py_wheel attributes (platform tags of a binary wheel).
    """
    folder = native.package_name()
    deps = []
    pinned = []
    for text in requires:
        project = _project(text)
        if project in LIBRARIES:
            if text != project:
                fail("%s: name the sibling %s without a version; it is pinned to %s" %
                     (distribution, project, VERSION))
            deps.append(LIBRARIES[project])
            pinned.append(project + "==" + VERSION)
        else:
            deps.append(requirement(project))
            pinned.append(text)

    py_library(
        name = name,
        srcs = native.glob([name + "/**/*.py"]),
        # Package data (the errors reference `plax/errors.md`) travels with the code.
        data = data + native.glob([name + "/**/*.md"], allow_empty = True),
        imports = ["."],
        deps = deps,
        visibility = _PUBLIC,
    )
    py_package(
        name = "package",
        packages = [folder.replace("/", ".") + "." + name],
        deps = [":" + name],
        visibility = _PUBLIC,
    )
    if root_files:
        native.filegroup(name = "root_files", srcs = root_files)
    py_wheel(
        name = "wheel",
        distribution = distribution,
        version = VERSION,
        python_requires = PYTHON_REQUIRES,
        description_file = "README.md",
        requires = pinned,
        extra_requires = extra_requires,
        entry_points = entry_points,
        strip_path_prefixes = [folder],
        deps = [":package"] + ([":root_files"] if root_files else []),
        visibility = _PUBLIC,
        **wheel_attrs
    )

def plax_wheels(name):
    """A filegroup of every distribution's wheel: `bazel build //:<name>`."""
    native.filegroup(
        name = name,
        srcs = [library.split(":")[0] + ":wheel" for library in LIBRARIES.values()],
        visibility = _PUBLIC,
    )
