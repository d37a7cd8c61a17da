"""The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm, pinned
in .ci/run) against a real `toolreg serve` over streamable HTTP on 127.0.0.1, stateless
(the default) and with `--stateful` sessions, serving the tools its scenarios call
(tests/_conformance_tools.py).

The suite needs Node >= 22; `.ci/run` installs both into its temp dir and sets
`TOOLREG_CONFORMANCE_BIN` to a command that runs the suite's CLI (`conformance`). Without
it these tests are skipped. Every scenario that applies to a tools-only toolreg server
must pass; the others are listed with the reason (docs/guides/mcp/serve.md lists both).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from _mcp_support import ROOT, HttpChild, serve_command

BIN = os.environ.get("TOOLREG_CONFORMANCE_BIN")

APPLICABLE = {
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
}
NOT_APPLICABLE = {
    # a tools-only server: no resources, prompts or completions
    "completion-complete": "no completions",
    "resources-list": "no resources",
    "resources-read-text": "no resources",
    "resources-read-binary": "no resources",
    "resources-templates-read": "no resources",
    "resources-subscribe": "no resources",
    "resources-unsubscribe": "no resources",
    "prompts-list": "no prompts",
    "prompts-get-simple": "no prompts",
    "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts",
    "prompts-get-with-image": "no prompts",
    # a toolreg tool cannot ask the client's model or user: its only elicitation is the
    # confirmation of a call that needs one (tests/mcp/test_mcp_serve.py)
    "tools-call-sampling": "no sampling",
    "tools-call-elicitation": "elicitation for confirmations only",
    "elicitation-sep1034-defaults": "elicitation for confirmations only",
    "elicitation-sep1330-enums": "elicitation for confirmations only",
}

needs_the_suite = pytest.mark.skipif(
    not BIN,
    reason="TOOLREG_CONFORMANCE_BIN is not set: the MCP conformance suite "
    "(npm @modelcontextprotocol/conformance, Node >= 22) is not installed here; "
    ".ci/run installs it",
)


def outcomes(results: Path) -> dict[str, list[str]]:
    """Scenario -> the status of each of its checks, from the suite's result folders
    (`server-<scenario>-<timestamp>/checks.json`)."""
    found: dict[str, list[str]] = {}
    for folder in results.iterdir():
        named = re.fullmatch(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z", folder.name)
        assert named, folder.name
        checks = json.loads((folder / "checks.json").read_text(encoding="utf-8"))
        found[named.group(1)] = [check["status"] for check in checks]
    return found


@pytest.mark.slow
@needs_the_suite
@pytest.mark.parametrize("options", [(), ("--stateful",)], ids=["stateless", "stateful"])
def test_the_conformance_suite_passes_every_scenario_that_applies(
    options: tuple[str, ...], tmp_path: Path
) -> None:
    assert BIN is not None
    command = serve_command("tests/_conformance_tools.py:registry")
    with HttpChild(*command, "--transport", "http", "--port", "0", *options) as server:
        ran = subprocess.run(
            [BIN, "server", "--url", server.url, "--suite", "all", "-o", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
        )
    found = outcomes(tmp_path)
    assert set(found) == APPLICABLE | set(NOT_APPLICABLE), ran.stdout[-3000:] + ran.stderr
    failed = {name: found[name] for name in APPLICABLE if "FAILURE" in found[name]}
    assert not failed, ran.stdout[-5000:]
    passed = {name for name in APPLICABLE if "SUCCESS" in found[name]}
    # server-sse-*: warnings only in a stateless server (no session to hold streams), and
    # no resumability (no event store) in either
    assert APPLICABLE - passed <= {"server-sse-multiple-streams", "server-sse-polling"}


def test_the_serve_guide_lists_every_scenario() -> None:
    guide = (ROOT / "docs" / "guides" / "mcp" / "serve.md").read_text(encoding="utf-8")
    missing = [name for name in APPLICABLE | set(NOT_APPLICABLE) if f"`{name}`" not in guide]
    assert not missing
