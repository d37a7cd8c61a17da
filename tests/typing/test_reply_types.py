"""`Reply[T]`: `send(..., output_type=Report)` is typed `Reply[Report]`, so `reply.output`
is a `Report` (mypy --strict over a user's file); compat's `dispatch_tool` takes what
`parse_calls` returns."""

from __future__ import annotations

from pathlib import Path

import pytest
from _mypy import HERE, STRICT, run_mypy

pytest.importorskip("mypy.api")

CLEAN = HERE / "typed_reply.py"
CONFIG = (
    STRICT
    + """
[mypy-openai.*,httpx.*,pydantic.*,pydantic_core.*,jsonschema.*,docstring_parser.*]
follow_imports = skip
"""
)


def test_reply_output_is_typed_by_output_type(tmp_path: Path) -> None:
    lines = run_mypy(CONFIG, "typing-reply", [CLEAN], tmp_path)[CLEAN.name]
    assert [line for line in lines if ": error:" in line] == []
