"""Shared test configuration.

Property tests are derandomized by default so that CI is reproducible; run with
``HYPOTHESIS_PROFILE=explore`` to search new random examples locally.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
