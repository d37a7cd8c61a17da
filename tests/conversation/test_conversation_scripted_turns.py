"""`toolreg.testing.text()` takes the assistant's answer as a str: anything else is refused
where the script is written, with the fix, instead of failing later inside `send`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreg import Conversation, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text


@pytest.mark.parametrize(
    ("content", "kind"),
    [({"city": "Paris"}, "dict"), ([1, 2], "list"), (42, "int"), (True, "bool")],
)
def test_a_json_value_is_refused_with_the_json_dumps_fix(content: Any, kind: str) -> None:
    with pytest.raises(UsageError) as caught:
        text(content)
    message = str(caught.value)
    assert f"text() takes the assistant's answer as a str, not {kind}" in message
    assert "text(json.dumps(value))" in message


@pytest.mark.parametrize(("content", "kind"), [(None, "NoneType"), (b"hi", "bytes")])
def test_other_non_strings_are_refused_too(content: Any, kind: str) -> None:
    with pytest.raises(UsageError, match=f"not {kind}: pass the assistant's answer as a str"):
        text(content)


def test_a_bad_finish_reason_is_refused() -> None:
    with pytest.raises(UsageError, match="finish_reason must be a str, not int"):
        text("ok", finish_reason=1)  # type: ignore[arg-type]


def test_the_documented_fix_works_end_to_end() -> None:
    with ScriptedServer([text(json.dumps({"result": 42}))]) as server:
        chat = Conversation(server.client(), "m", registry=ToolRegistry())
        reply = chat.send("How much?", output_type=int)
    assert reply.output == 42
