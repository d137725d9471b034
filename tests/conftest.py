"""Shared fixtures and hypothesis settings."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
