"""MCP tasks on a shared backend (`TaskOptions(backend="redis://...")`): a real
`redis-server`, two servers in this process standing for two workers (each its own app,
`ToolService`, store and pydocket worker, sharing only Redis), raw JSON-RPC over real HTTP.
What several processes and a SIGKILL add is in test_mcp_tasks_workers.py."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from _store_support import RedisServer, redis_url  # noqa: F401 - the session fixture
from _task_tools import registry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.auth.provider import AccessToken
from pydantic import ValidationError
from test_mcp_tasks import TASKS, Rpc, started, text

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.errors import UsageError
from toolreg.idempotency import META_KEY
from toolreg.mcp import HttpServer, ResourceServer, TaskOptions, asgi_app
from toolreg.mcp.server import approved
from toolreg.mcp.tasks import LOST_MESSAGE, task_key

NOT_FOUND = {"code": -32602, "message": "Task not found."}
ASKS = {**TASKS, "elicitation": {"form": {}}}


def by_subject(token: str) -> AccessToken:
    return AccessToken(token=token, client_id="c", scopes=[], subject=token)


AUTH = ResourceServer(
    by_subject, resource="https://mcp.example.com/mcp", authorization_servers=["https://a"]
)


def options(url: str, **more: Any) -> TaskOptions:
    """A queue of the test's own on the session's Redis (tests do not see each other's)."""
    settings: dict[str, Any] = {"backend": url, "queue": uuid.uuid4().hex, "reclaim_after": 0.5}
    return TaskOptions(**{**settings, **more})


@contextlib.contextmanager
def workers(tasks: TaskOptions, count: int = 2, **app: Any) -> Iterator[list[HttpServer]]:
    """`count` servers (workers) sharing `tasks`' backend, each on its own port."""
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(HttpServer(asgi_app(registry, tasks=tasks, **app)))
            for _ in range(count)
        ]


def lines(folder: Path) -> list[dict[str, Any]]:
    """What the tools wrote in `folder`: one line per run, one per cancelled run."""
    path = folder / "runs.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def runs(folder: Path) -> list[dict[str, Any]]:
    """The runs of the tools in `folder`."""
    return [line for line in lines(folder) if "pid" in line]


def status_message(rpc: Rpc, task_id: str, prefix: str) -> str:
    """Poll until the task's status message starts with `prefix`."""
    for _ in range(2000):
        message: str = rpc.get(task_id)["result"].get("statusMessage", "")
        if message.startswith(prefix):
            return message
    raise AssertionError(f"no status message {prefix!r}: {rpc.get(task_id)}")


def test_a_task_created_through_one_worker_is_read_through_another(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    with workers(options(redis_url)) as (a, b):
        first, second = Rpc(a.url), Rpc(b.url)
        task_id = started(first, "charge", {"folder": str(tmp_path)})
        assert status_message(second, task_id, "1: pid ")  # its progress, seen through b
        (tmp_path / "go").touch()
        done = second.until(task_id, "completed")
        assert text(done["result"]).startswith("charge by ")
        assert done["ttlMs"] > 0
        assert first.get(task_id)["result"]["result"] == done["result"]
        assert [r["tool"] for r in runs(tmp_path)] == ["charge"]  # ran once, in one of them


def test_a_question_asked_in_one_worker_is_answered_through_another(
    redis_url: str,  # noqa: F811
) -> None:
    with workers(options(redis_url)) as (a, b):
        first, second = Rpc(a.url), Rpc(b.url)
        for answer, expected in (
            ({"action": "accept", "content": {"confirm": True}}, "wiped sda"),
            ({"action": "decline"}, None),
        ):
            task_id = started(first, "wipe", {"disk": "sda"}, capabilities=ASKS)
            waiting = second.until(task_id, "input_required")
            ((key, request),) = waiting["inputRequests"].items()
            assert request["params"]["message"] == """Run the tool 'wipe' with {"disk": "sda"}?"""
            ignored = {"input-99": {"action": "accept", "content": {"confirm": True}}}
            second("tasks/update", {"taskId": task_id, "inputResponses": ignored})
            assert first.get(task_id)["result"]["status"] == "input_required"
            reply = second("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
            assert reply["result"]["resultType"] == "complete"
            done = first.until(task_id, "completed")
            if expected is None:
                assert done["result"]["isError"] is True
            else:
                assert text(done["result"]).startswith(expected)


def test_a_task_cancelled_through_another_worker_stops_where_it_runs(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    with workers(options(redis_url)) as (a, b):
        first, second = Rpc(a.url), Rpc(b.url)
        task_id = started(first, "charge", {"folder": str(tmp_path)})
        status_message(first, task_id, "1: pid ")  # it runs
        assert second("tasks/cancel", {"taskId": task_id})["result"]["resultType"] == "complete"
        cancelled = first.get(task_id)["result"]
        assert cancelled["status"] == "cancelled"
        assert cancelled["statusMessage"] == "Cancelled by the client."
        for _ in range(2000):  # the async tool itself was cancelled, in whichever worker
            if any("cancelled" in line for line in lines(tmp_path)):
                break
            first.get(task_id)
        assert ["cancelled" in line for line in lines(tmp_path)] == [False, True]
        second("tasks/cancel", {"taskId": task_id})  # again: it stays as it ended
        assert first.get(task_id)["result"]["status"] == "cancelled"


def test_each_caller_sees_only_its_own_tasks_in_every_worker(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    with workers(options(redis_url), auth=AUTH) as (a, b):
        alice = Rpc(a.url, {"authorization": "Bearer alice"})
        mallory = Rpc(b.url, {"authorization": "Bearer mallory"})
        alice_too = Rpc(b.url, {"authorization": "Bearer alice"})
        task_id = started(alice, "charge", {"folder": str(tmp_path)})
        for method, extra in (
            ("tasks/get", {}),
            ("tasks/cancel", {}),
            ("tasks/update", {"inputResponses": {"input-1": {"action": "accept"}}}),
        ):
            assert mallory(method, {"taskId": task_id, **extra})["error"] == NOT_FOUND
        assert alice_too.get(task_id)["result"]["status"] == "working"  # untouched
        (tmp_path / "go").touch()
        assert text(alice_too.until(task_id, "completed")["result"]).startswith("charge")
        for made_up in ("x", task_id[:-1] + "A", "y" * 5000):
            assert alice.get(made_up)["error"] == NOT_FOUND


def test_the_limits_hold_across_workers(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    tasks = options(redis_url, max_running=3, max_per_caller=2)
    with workers(tasks, auth=AUTH) as (a, b):
        alice_a = Rpc(a.url, {"authorization": "Bearer alice"})
        alice_b = Rpc(b.url, {"authorization": "Bearer alice"})
        bob_b = Rpc(b.url, {"authorization": "Bearer bob"})
        carol_a = Rpc(a.url, {"authorization": "Bearer carol"})
        mine = [started(alice_a, "charge", {"folder": str(tmp_path)})]
        mine.append(started(alice_b, "charge", {"folder": str(tmp_path)}))
        assert alice_a.call("double", {"x": 1})["error"] == {
            "code": -32000,
            "message": "Too many tasks of this caller running (2); try again later.",
        }
        theirs = started(bob_b, "charge", {"folder": str(tmp_path)})
        assert carol_a.call("double", {"x": 1})["error"] == {
            "code": -32000,
            "message": "Too many tasks running (3); try again later.",
        }
        assert [r["tool"] for r in runs(tmp_path)].count("charge") <= 3  # nothing else ran
        (tmp_path / "go").touch()
        for rpc, task_id in ((alice_a, mine[0]), (alice_b, mine[1]), (bob_b, theirs)):
            rpc.until(task_id, "completed")
        again = started(carol_a, "double", {"x": 5})  # the slots are free again
        assert text(carol_a.until(again, "completed")["result"]).startswith("10 by ")


def test_results_outlive_every_worker_and_runs_are_taken_over(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Every worker stops (a restart): a finished task's result is read from the new ones;
    a task that was running is taken over `reclaim_after` later and, as its tool says,
    run again with the same idempotency key (`on_worker_lost="rerun"`, or an idempotent
    tool by default) or ended `failed` (`"fail"`, or any other tool by default)."""
    tasks = options(redis_url)
    folders = {name: tmp_path / name for name in ("charge", "reindex", "ship", "export")}
    for folder in folders.values():
        folder.mkdir()
    with workers(tasks) as (a, _):
        first = Rpc(a.url)
        finished = started(first, "double", {"x": 21})
        result = first.until(finished, "completed")["result"]
        running = {
            name: started(first, name, {"folder": str(folder)}) for name, folder in folders.items()
        }
        for task_id in running.values():
            status_message(first, task_id, "1: pid ")
    # every worker has stopped; new ones start
    for folder in folders.values():
        (folder / "go").touch()
    with workers(tasks, count=1) as (c,):
        again = Rpc(c.url)
        assert again.get(finished)["result"]["result"] == result
        for name in ("charge", "reindex"):
            done = again.until(running[name], "completed")
            assert text(done["result"]).startswith(name)
            # run again by each worker that took it over (b, when a stopped; then c),
            # each time with the task's idempotency key
            assert len(runs(folders[name])) >= 2
            key = runs(folders[name])[0]["key"]
            assert key == task_key(running[name], name, {"folder": str(folders[name])})
            assert {(run["key"], run["task"]) for run in runs(folders[name])} == {
                (key, running[name])
            }
        for name in ("ship", "export"):
            failed = again.until(running[name], "failed")
            assert failed["error"]["message"] == LOST_MESSAGE
            assert failed["statusMessage"] == LOST_MESSAGE
            assert len(runs(folders[name])) == 1  # not run again


def test_a_finished_task_expires_after_its_ttl(redis_url: str) -> None:  # noqa: F811
    with workers(options(redis_url, ttl=0.2), count=1) as (a,):
        rpc = Rpc(a.url)
        task_id = started(rpc, "double", {"x": 2})
        rpc.until(task_id, "completed")
        for _ in range(2000):
            answer = rpc.get(task_id)
            if "error" in answer:
                break
        assert answer["error"] == NOT_FOUND


def test_a_task_past_its_lifetime_fails(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    with workers(options(redis_url, max_lifetime=0.3, max_running=1), count=1) as (a,):
        rpc = Rpc(a.url)
        task_id = started(rpc, "charge", {"folder": str(tmp_path)})
        failed = rpc.until(task_id, "failed")
        assert failed["error"]["code"] == -32001
        assert "ran past its lifetime (0.3 s)" in failed["error"]["message"]
        assert text(rpc.until(started(rpc, "double", {"x": 1}), "completed")["result"])


def test_a_redis_that_stops_answering_fails_the_request_not_the_server(
    tmp_path: Path,
) -> None:
    server = RedisServer(tmp_path)
    try:
        with workers(options(server.url), count=1) as (a,):
            rpc = Rpc(a.url)
            task_id = started(rpc, "double", {"x": 4})
            rpc.until(task_id, "completed")
            server.stop()
            answer = rpc.get(task_id)
            assert answer["error"]["message"] == "The task store did not answer; try again later."
            assert "redis" not in json.dumps(answer).lower()  # no address, no traceback
            assert "error" in rpc.call("double", {"x": 1})
    finally:
        server.stop()


def test_a_tampered_record_fails_its_task_without_a_traceback(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    import redis

    tasks = options(redis_url)
    with workers(tasks, count=1) as (a,):
        rpc = Rpc(a.url)
        task_id = started(rpc, "charge", {"folder": str(tmp_path)})
        status_message(rpc, task_id, "1: pid ")
        client = redis.Redis.from_url(redis_url)
        record = f"toolreg:tasks:{tasks.queue}:task:{task_id}"
        client.hset(record, mapping={"result": "{not json", "inputs": "[1, 2"})
        assert rpc.get(task_id)["result"]["status"] == "working"
        client.hset(record, "owner", "0" * 64)  # someone else's now
        assert rpc.get(task_id)["error"] == NOT_FOUND
        client.close()


def test_the_options_are_checked() -> None:
    for bad, words in (
        ({"backend": "http://user:secret@host/"}, "a Redis URL, starting with redis://"),
        ({"backend": 5}, "a Redis URL"),
        ({"backend": "redis://h", "queue": "a b"}, "1 to 64 letters"),
        ({"backend": "redis://h", "queue": ""}, "1 to 64 letters"),
        ({"backend": "redis://h", "reclaim_after": 0}, "must be a positive number"),
    ):
        with pytest.raises(UsageError, match=words) as caught:
            TaskOptions(**bad)
        assert "secret" not in str(caught.value)
    assert "secret" not in repr(TaskOptions(backend="redis://:secret@127.0.0.1:1/0"))


def test_on_worker_lost_is_checked_at_registration() -> None:
    def tool() -> str:
        """A tool."""
        return ""

    with pytest.raises(ToolDefinitionError, match="on_worker_lost='maybe' must be 'rerun'"):
        ToolRegistry().register_tool(task="optional", on_worker_lost="maybe")(tool)  # type: ignore[call-overload]
    with pytest.raises(ToolDefinitionError, match="applies to a tool run as an MCP task"):
        ToolRegistry().register_tool(on_worker_lost="rerun")(tool)
    registered = ToolRegistry()
    registered.register_tool(task="required", on_worker_lost="rerun")(tool)
    assert registered.get("tool").on_worker_lost == "rerun"  # type: ignore[union-attr]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=10,
)
YES = {"action": "accept", "content": {"confirm": True}}


def approves(answer: Any) -> bool:
    try:
        return approved(types.ElicitResult.model_validate(answer))
    except ValidationError:
        return False


@pytest.mark.slow
# the servers' threads use `random` (pydocket's jitter) while hypothesis draws
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_answers_of_any_shape_from_any_worker_approve_only_an_explicit_yes(
    redis_url: str,  # noqa: F811
) -> None:
    """Hostile `tasks/update`s, sent through the worker that does not run the task: any
    JSON as the answer, other keys beside it, the same answer replayed. Each is
    acknowledged; the tool runs only on an explicit yes, and only once."""
    with workers(options(redis_url)) as (a, b):
        first, second = Rpc(a.url), Rpc(b.url)

        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            answer=st.one_of(st.just(YES), JSON),
            others=st.dictionaries(st.text(max_size=12), JSON, max_size=3),
        )
        def check(answer: Any, others: dict[str, Any]) -> None:
            task_id = started(first, "wipe", {"disk": "sdz"}, capabilities=ASKS)
            ((key, _),) = second.until(task_id, "input_required")["inputRequests"].items()
            update = {"taskId": task_id, "inputResponses": {**others, key: answer}}
            for _ in range(2):  # replayed: the second is ignored (or finds it ended)
                reply = second("tasks/update", update, capabilities=ASKS)
                assert reply["result"]["resultType"] == "complete"
            done = first.until(task_id, "completed")["result"]
            assert done["isError"] is not approves(answer)
            if approves(answer):
                assert text(done).startswith("wiped sdz by ")

        check()


def test_a_task_is_kept_without_the_callers_credentials(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The job kept in Redis, and the request a `context=` factory gets when the task runs
    (in any worker), have no Authorization or Cookie header and no raw token."""
    import redis

    def verify(token: str) -> AccessToken | None:
        subject = token.removeprefix("secret-")
        return AccessToken(token=token, client_id="c", scopes=[], subject=subject)

    auth = ResourceServer(
        verify, resource="https://mcp.example.com/mcp", authorization_servers=["https://a"]
    )
    seen: list[Any] = []
    tasks = options(redis_url)
    headers = {"authorization": "Bearer secret-alice", "cookie": "sid=s3cr3t", "x-tenant": "t1"}
    with workers(tasks, auth=auth, context=seen.append) as (a, b):
        rpc = Rpc(a.url, headers)
        task_id = started(rpc, "charge", {"folder": str(tmp_path)})
        status_message(rpc, task_id, "1: pid ")  # it runs (its job is kept till it ends)
        client = redis.Redis.from_url(redis_url)
        record = client.hgetall(f"toolreg:tasks:{tasks.queue}:task:{task_id}")
        client.close()
        kept = b"".join(record.values())
        assert b"t1" in kept  # the other headers are kept for the run
        assert b"secret-alice" not in kept
        assert b"s3cr3t" not in kept
        assert b"alice" in kept  # the subject, for context factories and the run's caller
        Rpc(b.url, headers)("tasks/cancel", {"taskId": task_id})
    (request,) = seen
    assert request.headers["x-tenant"] == "t1"
    assert "authorization" not in request.headers
    assert "cookie" not in request.headers
    assert (request.token.subject, request.token.token) == ("alice", "")


def test_a_callers_own_idempotency_key_is_the_tasks_in_every_run(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A key the caller sends in `_meta` (as a mounted call does) is the one every run of
    the task gets; a malformed one is replaced by the task's own."""
    tasks = options(redis_url)
    with workers(tasks, count=1) as (a,):
        rpc = Rpc(a.url)
        for sent, folder in (("order-42-charge", "given"), ("x" * 300, "malformed")):
            (tmp_path / folder).mkdir()
            arguments = {"folder": str(tmp_path / folder)}
            call = {"name": "charge", "arguments": arguments, "_meta": {META_KEY: sent}}
            answer = rpc("tools/call", call)
            assert "result" in answer, answer
            task_id = answer["result"]["taskId"]
            status_message(rpc, task_id, "1: pid ")
            (tmp_path / folder / "go").touch()
            rpc.until(task_id, "completed")
            (run,) = runs(tmp_path / folder)
            expected = sent if folder == "given" else task_key(task_id, "charge", arguments)
            assert run["key"] == expected
