"""Hypothesis profiles for plax's tests.

`default` is thorough and derandomized, so CI runs are reproducible; `interactive`
runs a handful of examples for quick local iterations. `PLAX_HYPOTHESIS_PROFILE`
chooses one.
"""
from __future__ import annotations

import os

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
    hypothesis.settings.load_profile(profile)
    return profile
