"""Deprecated: moved to `toolreg.toolsets.search`. Removed in 0.3."""

import warnings

from ..toolsets.search import *  # noqa: F403
from ..toolsets.search import __all__  # noqa: F401

warnings.warn(
    "toolreg.search moved to toolreg.toolsets.search (removed in 0.3)", DeprecationWarning, 2
)
