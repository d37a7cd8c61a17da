"""The crash kit's own parts, in this process: points, the model scripted by round, usage
errors. (Its child processes run in tests/durable/test_durable_crash.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg.errors import UsageError
from toolreg.testing import call, text, tool_calls
from toolreg.testing.crash import (
    NO_CRASH,
    CrashKit,
    CrashPoint,
    CrashReport,
    after_model_call,
    after_tool_returns,
    before_save,
    by_round,
    during_model_call,
    while_tool_runs,
)

SCRIPT = [tool_calls(call("charge", {"amount": 5}, id="c1")), text("Done.")]


def test_points_say_where_they_kill() -> None:
    assert str(NO_CRASH) == "no crash"
    assert str(after_model_call(2)) == "after model call 2"
    assert str(during_model_call()) == "during model call 1"
    assert str(while_tool_runs("charge")) == "while charge runs (run 1)"
    assert str(after_tool_returns("charge", 3)) == "after charge returns (run 3)"
    assert str(before_save()) == "before save 1"
    assert while_tool_runs("charge", 2) == CrashPoint("tool", 2, "charge")


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "1", None])
def test_a_point_counts_from_one(n: Any) -> None:
    for make in (after_model_call, during_model_call, before_save):
        with pytest.raises(UsageError, match=rf"{make.__name__}: n is a count from 1"):
            make(n)
    with pytest.raises(UsageError, match="while_tool_runs: n is a count from 1"):
        while_tool_runs("charge", n)


@pytest.mark.parametrize("tool", ["", None, 3, b"charge"])
def test_a_point_names_a_tool_by_its_name(tool: Any) -> None:
    with pytest.raises(UsageError, match="names a tool by its name"):
        while_tool_runs(tool)
    with pytest.raises(UsageError, match="names a tool by its name"):
        after_tool_returns(tool)


@pytest.mark.parametrize("scenario", ["", "module", ":function", "module:"])
def test_a_scenario_is_module_colon_function(scenario: str, tmp_path: Any) -> None:
    with pytest.raises(UsageError, match="give it as 'module:function'"):
        CrashKit(scenario, workdir=tmp_path, model=SCRIPT)


def test_the_model_needs_turns(tmp_path: Any) -> None:
    with pytest.raises(UsageError, match="a non-empty list of Turns"):
        CrashKit("m:f", workdir=tmp_path, model=[])
    with pytest.raises(UsageError, match="a non-empty list of Turns"):
        by_round(["Done."])  # type: ignore[list-item]


def test_the_answer_depends_on_the_rounds_in_the_history() -> None:
    answer = by_round(SCRIPT)
    user = {"role": "user", "content": "Charge"}
    said = {"role": "assistant", "content": None}
    assert answer({"messages": [user]}) is SCRIPT[0]
    assert answer({"messages": [user, said, {"role": "tool"}]}) is SCRIPT[1]
    assert answer({"messages": [user, said, said, said]}) is SCRIPT[1]  # past the end: last
    # the Responses API: a run of output items is one answer
    items = [
        {"role": "user", "content": "Charge"},
        {"type": "function_call", "call_id": "c1"},
        {"type": "function_call", "call_id": "c2"},
        {"type": "function_call_output", "call_id": "c1"},
    ]
    assert answer({"input": items}) is SCRIPT[1]
    assert answer({"input": items[:1]}) is SCRIPT[0]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["messages", "input", "model"]), json_values))
def test_any_request_body_gets_one_of_the_scripted_answers(body: dict[str, Any]) -> None:
    assert by_round(SCRIPT)(body) in SCRIPT


def test_a_report_says_whether_every_tool_ran_once() -> None:
    def report(runs: dict[str, int]) -> CrashReport:
        return CrashReport(NO_CRASH, False, runs, {}, {}, 2, None, None, 1, [])

    assert report({"charge": 1, "notify": 1}).ran_once_each()
    assert not report({"charge": 2}).ran_once_each()
