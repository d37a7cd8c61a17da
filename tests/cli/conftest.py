"""Fixtures of the `toolreg` command's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def clean_chatglm3_registry(empty_chatglm3_registry: None) -> None:
    """Every test of the command starts with ChatGLM3's registry empty (tests/conftest.py)."""
