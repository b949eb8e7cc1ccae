"""Hypothesis profiles for plax's tests.

`default` is thorough and derandomized, so CI runs are reproducible; `interactive`
runs a handful of examples for quick local iterations. `PLAX_HYPOTHESIS_PROFILE`
chooses one.

A derandomized test's examples follow from a hash of the test and from Hypothesis's
own generation code, which changes between releases: the same test met a complex
`reduce_max` under 6.170 and never under 6.155. So the default profile runs only
under the version requirements-dev.txt pins, and CI and every clone draw the same
examples.
"""
from __future__ import annotations

import os
import pathlib
import re

import hypothesis

PROFILE_ENV_VAR = "PLAX_HYPOTHESIS_PROFILE"

_PROFILES = {
    "default": dict(max_examples=50, deadline=None, derandomize=True, print_blob=True),
    "interactive": dict(max_examples=8, deadline=None, derandomize=False,
                        suppress_health_check=[hypothesis.HealthCheck.too_slow]),
}


def setup_hypothesis() -> str:
    """Registers plax's profiles and loads the one `PLAX_HYPOTHESIS_PROFILE` names."""
    for name, settings in _PROFILES.items():
        hypothesis.settings.register_profile(name, **settings)
    profile = os.environ.get(PROFILE_ENV_VAR, "default")
    if profile not in _PROFILES:
        raise ValueError(f"{PROFILE_ENV_VAR}={profile!r} is not a plax hypothesis profile; "
                         f"choose one of {sorted(_PROFILES)}")
    if profile == "default":
        _check_pinned_version()
    hypothesis.settings.load_profile(profile)
    return profile


def _check_pinned_version() -> None:
    requirements = pathlib.Path(__file__).parents[1] / "requirements-dev.txt"
    pinned = re.search(r"^hypothesis==(\S+)$", requirements.read_text(), re.M)
    if pinned and pinned[1] != hypothesis.__version__:
        raise RuntimeError(
            f"the tests draw their examples with Hypothesis {pinned[1]} (requirements-dev.txt) "
            f"but {hypothesis.__version__} is installed, which draws other ones: run "
            f"`python3 -m pip install -r requirements-dev.txt`, or set "
            f"{PROFILE_ENV_VAR}=interactive for a quick randomized run")
