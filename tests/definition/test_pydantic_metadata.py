"""pydantic in a tool's signature: `Field(...)` in `Annotated` read like `Param`, pydantic's
constrained and special types described and enforced, metadata toolreg cannot use reported."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

import annotated_types
import pytest
from pydantic import (
    AfterValidator,
    AwareDatetime,
    EmailStr,
    Field,
    FutureDate,
    NaiveDatetime,
    PastDate,
    SecretStr,
    conint,
    constr,
)

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.cli.lint import lint_registry

MADE: list[int] = []


def fresh_tags() -> list[str]:
    MADE.append(1)
    return ["new"]


def broken() -> int:
    raise RuntimeError("no clock")


def test_field_in_annotated_is_read_like_param() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def book(
        nights: Annotated[int, Field(ge=1, le=30, description="How many nights")],
        code: Annotated[
            str, Field(pattern=r"^[A-Z]{3}$", min_length=3, max_length=3, title="Code")
        ],
        guests: Annotated[int, Field(multiple_of=2, examples=[2, 4])] = 2,
    ) -> str:
        """Book a stay."""
        return f"{nights} {code} {guests}"

    properties = reg["book"].parameters["properties"]
    assert properties["nights"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 30,
        "description": "How many nights",
    }
    assert properties["code"] == {
        "type": "string",
        "minLength": 3,
        "maxLength": 3,
        "pattern": "^[A-Z]{3}$",
        "title": "Code",
    }
    assert properties["guests"] == {
        "type": "integer",
        "multipleOf": 2,
        "examples": [2, 4],
        "default": 2,
    }
    zero = reg.dispatch_tool("book", '{"nights": 0, "code": "OSL"}')
    assert zero.content == "Invalid arguments for tool 'book': nights: must be >= 1."
    bad = reg.dispatch_tool("book", '{"nights": 2, "code": "osl", "guests": 3}')
    assert bad.error_kind == "invalid_arguments"
    assert "code: must match pattern" in bad.content
    assert "guests: must be a multiple of 2" in bad.content
    assert reg.dispatch_tool("book", '{"nights": 2, "code": "OSL"}').content == "2 OSL 2"


def test_a_field_default_and_default_factory_fill_what_the_function_does_not_declare() -> None:
    reg = ToolRegistry()
    MADE.clear()

    @reg.register_tool
    def note(
        text: str,
        priority: Annotated[int, Field(default=3, ge=1)],
        tags: Annotated[list[str], Field(default_factory=fresh_tags)],
    ) -> str:
        """Write a note."""
        tags.append("seen")  # a fresh list per call: the next call must not see this
        return json.dumps([text, priority, tags])

    schema = reg["note"].parameters
    assert schema["required"] == ["text"]
    assert schema["properties"]["priority"]["default"] == 3
    assert "default" not in schema["properties"]["tags"]
    assert reg.dispatch_tool("note", '{"text": "a"}').content == '["a", 3, ["new", "seen"]]'
    assert reg.dispatch_tool("note", '{"text": "b"}').content == '["b", 3, ["new", "seen"]]'
    assert MADE == [1, 1]
    given = reg.dispatch_tool("note", '{"text": "c", "priority": 1, "tags": []}')
    assert given.content == '["c", 1, ["seen"]]'
    assert given.arguments == {"text": "c", "priority": 1, "tags": ["seen"]}
    null = reg.dispatch_tool("note", '{"text": "d", "priority": 0}')
    assert null.content == "Invalid arguments for tool 'note': priority: must be >= 1."


def test_two_defaults_for_one_parameter_are_a_definition_error() -> None:
    reg = ToolRegistry()

    def twice(n: Annotated[int, Field(default=1)] = 2) -> int:
        """Twice."""
        return n

    with pytest.raises(ToolDefinitionError, match="parameter 'n': the parameter has two defaults"):
        reg.register_tool(twice)


def test_a_failing_default_factory_is_the_tools_failure() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def stamp(at: Annotated[int, Field(default_factory=broken)]) -> int:
        """Stamp."""
        return at

    result = reg.dispatch_tool("stamp", "{}")
    assert result.error_kind == "execution_error"
    assert result.content == "Tool 'stamp' failed: the default of 'at' could not be made."
    assert isinstance(result.exception, RuntimeError)


def test_constrained_types_are_enforced() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def pick(
        n: conint(ge=1, multiple_of=2), word: constr(pattern=r"^[a-z]+$", min_length=2)
    ) -> str:  # type: ignore[valid-type]
        """Pick."""
        return f"{n} {word}"

    properties = reg["pick"].parameters["properties"]
    assert properties["n"] == {"type": "integer", "minimum": 1, "multipleOf": 2}
    assert properties["word"] == {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"}
    assert not reg.dispatch_tool("pick", '{"n": 3, "word": "ab"}').ok
    assert not reg.dispatch_tool("pick", '{"n": 2, "word": "A"}').ok
    assert reg.dispatch_tool("pick", '{"n": 2, "word": "ab"}').content == "2 ab"


def test_pydantic_special_types_are_described_and_enforced_by_pydantic() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def schedule(at: AwareDatetime, local: NaiveDatetime, born: PastDate, due: FutureDate) -> str:
        """Schedule."""
        seen.append((at, local, born, due))
        return "ok"

    properties = reg["schedule"].parameters["properties"]
    assert properties["at"] == {"type": "string", "format": "date-time"}
    assert properties["born"] == {"type": "string", "format": "date"}
    tomorrow = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    good = {
        "at": "2024-05-01T09:30:00+08:00",
        "local": "2024-05-01T09:30:00",
        "born": "1990-01-01",
        "due": tomorrow,
    }
    assert reg.dispatch_tool("schedule", json.dumps(good)).ok
    assert seen[0][0].tzinfo is not None
    assert seen[0][1].tzinfo is None
    naive = reg.dispatch_tool("schedule", json.dumps({**good, "at": "2024-05-01T09:30:00"}))
    assert naive.error_kind == "invalid_arguments"
    assert naive.content.startswith("Invalid arguments for tool 'schedule': at: ")
    assert "timezone" in naive.content
    past = reg.dispatch_tool("schedule", json.dumps({**good, "due": "2000-01-01"}))
    assert "due: " in past.content
    assert "future" in past.content


def test_a_secret_is_taken_and_never_rendered_in_clear() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def login(user: str, password: SecretStr) -> dict[str, Any]:
        """Log in."""
        assert password.get_secret_value() == "hunter2"
        return {"user": user, "password": password}

    schema = reg["login"].parameters["properties"]["password"]
    assert schema == {"type": "string", "format": "password", "writeOnly": True}
    result = reg.dispatch_tool("login", '{"user": "ada", "password": "hunter2"}')
    assert result.ok, result.content
    assert result.content == '{"user": "ada", "password": "**********"}'
    assert "hunter2" not in result.content


def test_email_str_is_checked_by_pydantic() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def invite(to: EmailStr) -> str:
        """Invite."""
        return str(to)

    assert reg["invite"].parameters["properties"]["to"]["format"] == "email"
    assert reg.dispatch_tool("invite", '{"to": "ada@example.com"}').ok
    assert not reg.dispatch_tool("invite", '{"to": "not an address"}').ok


def test_metadata_toolreg_does_not_understand_is_reported_by_lint() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def shout(
        text: Annotated[str, AfterValidator(str.upper), "The text to shout"],
        times: Annotated[int, annotated_types.Predicate(lambda n: n % 2 == 1)] = 1,
    ) -> str:
        """Shout the text. Use it when the user wants something said loudly."""
        return text * times

    findings = [f for f in lint_registry(reg) if f.code == "ignored-metadata"]
    assert [(f.parameter, f.severity) for f in findings] == [
        ("text", "warning"),
        ("times", "warning"),
    ]
    assert "AfterValidator" in findings[0].message
    assert "Predicate" in findings[1].message
    assert reg["shout"].parameters["properties"]["text"]["description"] == "The text to shout"
