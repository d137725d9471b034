"""Shared test settings: hypothesis examples may be slow on a busy 2-core machine, so no deadline."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "attnviz", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("attnviz")
