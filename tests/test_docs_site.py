"""The documentation site (mkdocs.yml, docs/) builds from the sources with warnings as
errors, and its API reference has an entry for every public name of the modules the
issue lists. One build (about 10 s of CPU) serves every test here."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest
from workspace_layout import ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                reason="mkdocs is not installed (requirements-dev.txt has it)")

sys.path.insert(0, str(ROOT / "docs" / "hooks"))
from api_reference import public_names  # noqa: E402

# The modules whose every public name the reference must document.
REQUIRED = {"plax", "plax.numpy", "plax.lax", "plax.random", "plax.nn", "plax.sharding",
            "plax.tree_util", "plax.experimental.pallas", "plax.distributed", "plax.extend"}
PAGES = ["index.md", "installation.md", "jax-users.md", "extend.md", "errors.md"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    return out


def _documented() -> dict[str, str]:
    """`{module: API page}` from the pages' `::: api <module>` lines."""
    found = {}
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        for module in re.findall(r"^::: api (\S+)$", page.read_text(), re.MULTILINE):
            found[module] = page.stem
    return found


def test_the_site_has_its_pages(site):
    for page in PAGES:
        built = site / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), page
    errors = (site / "errors" / "index.html").read_text()
    assert 'id="simplifiedtraceback"' in errors and 'id="tracerboolconversionerror"' in errors


def test_every_public_name_has_an_entry_in_the_api_reference(site):
    documented = _documented()
    assert REQUIRED <= set(documented), sorted(REQUIRED - set(documented))
    for module, page in documented.items():
        html = (site / "api" / page / "index.html").read_text()
        ids = set(re.findall(r'id="([^"]+)"', html))
        missing = [n for n in public_names(module) if f"{module}.{n}" not in ids]
        assert not missing, f"{module}: no API entry for {missing}"


def test_entries_show_signatures_and_docstring_sections(site):
    html = (site / "api" / "plax" / "index.html").read_text()
    entry = html[html.index('id="plax.grad"'):][:6000]
    assert "plax.grad(fun" in entry and "argnums" in entry
