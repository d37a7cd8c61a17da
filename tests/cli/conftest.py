"""Fixtures of the `toolreg` command's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolreg.compat import chatglm3


@pytest.fixture(autouse=True)
def clean_chatglm3_registry() -> Iterator[None]:
    """ChatGLM3's registry is module-level (as in ChatGLM3): a test of the command starts
    with it empty, whatever a test before it in this process registered there (a docs test
    loads samples/chatglm3_tools.py in-process), and leaves it as it was."""
    saved = chatglm3.registry.tools()
    for tool in saved:
        chatglm3.registry.unregister(tool.name, version=tool.version)
    yield
    for name in chatglm3.registry.names():
        for tool in chatglm3.registry.versions(name):
            chatglm3.registry.unregister(name, version=tool.version)
    for tool in saved:
        chatglm3.registry.add(tool)
