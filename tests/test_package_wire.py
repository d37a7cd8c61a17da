"""Wire formats live only inside `formats/` and `conversation/providers/` (and `testing/`,
whose scripted server and inspection speak the wires on purpose): no other module of the
package names a key or a block type of one API's tool calls. The rule is cheap and exact:
no string constant of another module is one of `WIRE_KEYS`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "toolreg"
WIRE_HOMES = ("formats", "conversation/providers", "testing")
WIRE_KEYS = frozenset(
    {
        "tool_calls",  # OpenAI chat: an assistant message's calls
        "tool_call_id",  # OpenAI chat: a tool message's answer
        "function_call_output",  # Responses: a call's answer
        "tool_search_call",  # Responses: the API's tool search
        "tool_search_output",
        "tool_use",  # Anthropic: a call block
        "tool_use_id",
        "tool_result",  # Anthropic: an answer block
        "tool_reference",  # Anthropic: a deferred tool loaded by a search
    }
)


def wire_keys_in(source: str) -> list[tuple[int, str]]:
    """(line, key) of every string constant of `source` that is a wire key."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in WIRE_KEYS
    ]


def _outside_the_wire() -> list[Path]:
    homes = [PACKAGE / home for home in WIRE_HOMES]
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path.is_relative_to(home) for home in homes)
    ]


def test_no_module_outside_the_wire_homes_names_a_wire_key() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {key!r}"
        for path in _outside_the_wire()
        for line, key in wire_keys_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "a wire format's keys belong to its provider (conversation/providers/) or its format "
        f"(formats/): ask the provider (units, calls_in, last_calls, ...) instead: {found}"
    )


def test_the_rule_reads_what_it_should() -> None:
    assert wire_keys_in('x = m.get("tool_calls")\n"""tool_calls in a docstring"""') == [
        (1, "tool_calls")
    ]
    assert len(_outside_the_wire()) > 50  # the rule covers most of the package
    assert wire_keys_in((PACKAGE / "conversation/providers/anthropic.py").read_text()) != []
