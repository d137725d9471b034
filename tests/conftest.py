"""Shared test settings.

- hypothesis examples may be slow on a busy 2-core machine, so no deadline;
- the C kernel (attnviz.native) is built into a fresh cache folder for each test session, so the
  tests build it as a new user would and never touch ~/.cache.
"""

import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile(
    "attnviz", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("attnviz")

_CACHE = tempfile.mkdtemp(prefix="attnviz-test-cache-")
os.environ["ATTNVIZ_CACHE_DIR"] = _CACHE


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)
