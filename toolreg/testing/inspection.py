"""Reading recorded requests for ``ScriptedServer.assert_request``.

Works on both request shapes: Chat Completions (``messages``, ``tools[].function``,
legacy ``functions`` and ``role: "function"`` results) and the Responses API (``input``,
``instructions``, flat ``tools[]``, ``function_call_output`` items).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..content import sniff
from ..errors import with_article

Json = dict[str, Any]


def messages(body: Json) -> list[Json]:
    """Chat messages, or Responses input items (a string input becomes one user message)."""
    found = body.get("messages", body.get("input"))
    if isinstance(found, str):
        found = [{"role": "user", "content": found}]
    return [m for m in found or [] if isinstance(m, dict)]


def text_of(value: Any) -> str:
    """The text of a content value: a str, a list of parts, or anything else as JSON."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        return "".join(
            text_of(p.get("text", p.get("output"))) for p in value if isinstance(p, dict)
        )
    return json.dumps(value, ensure_ascii=False)


def tool_results(body: Json) -> list[tuple[str, str]]:
    """``(call id or legacy function name, result text)`` for every tool result sent back."""
    found: list[tuple[str, str]] = []
    for m in messages(body):
        if m.get("role") == "tool":
            found.append((str(m.get("tool_call_id")), text_of(m.get("content"))))
        elif m.get("role") == "function":
            found.append((str(m.get("name")), text_of(m.get("content"))))
        elif m.get("type") == "function_call_output":
            found.append((str(m.get("call_id")), text_of(m.get("output"))))
        elif isinstance(m.get("content"), list):  # the Messages API: tool_result blocks
            found += [
                (str(b.get("tool_use_id")), text_of(b.get("content")))
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    return found


def history_problems(entries: list[Json]) -> list[str]:
    """What OpenAI refuses in a history: a call left unanswered, an answer to no call, a call
    answered twice.

    Chat: an assistant's `tool_calls` are answered by the `tool` messages right after it;
    Responses API: every `function_call` has one `function_call_output`, every
    client-executed `tool_search_call` one `tool_search_output` (a hosted search's are the
    server's). Legacy `function` and ChatGLM3 `observation` messages carry no id: they answer
    the calls before them in order.

    Args:
        entries: the history: chat messages or Responses input items.

    Returns one sentence per problem; an empty list when the history is valid.

    Example:
        assert history_problems(reply.messages) == []
    """
    problems: list[str] = []
    answers: dict[str, int] = {}  # call id -> times answered
    waiting: list[str] = []  # chat: the ids the next tool messages must answer

    def answer(call_id: str, what: str) -> None:
        if call_id not in answers:
            problems.append(f"{what} answers no call ({call_id!r})")
            return
        answers[call_id] += 1
        if answers[call_id] == 2:
            problems.append(f"the call {call_id!r} is answered twice")

    for entry in entries:
        kind, role = entry.get("type"), entry.get("role")
        for arguments in _echoed_arguments(entry):
            if not _is_json_object(arguments):  # llama.cpp's server answers HTTP 500 here
                problems.append(f"Failed to parse tool call arguments as JSON: {arguments!r:.60}")
        if entry.get("execution") == "server":
            pass  # a hosted tool search: the server's call, answered by the server
        elif kind in ("function_call", "tool_search_call"):
            answers.setdefault(str(entry.get("call_id")), 0)
        elif kind in ("function_call_output", "tool_search_output"):
            answer(str(entry.get("call_id")), with_article(str(kind)))
        elif role == "tool":
            call_id = str(entry.get("tool_call_id"))
            answer(call_id, "a tool message")
            if call_id in waiting:
                waiting.remove(call_id)
        elif role in ("function", "observation"):  # no id: they answer the calls in order
            if waiting:
                answers[waiting.pop(0)] += 1
        else:
            for call_id in waiting:  # chat: an unanswered call, reported once
                problems.append(
                    f"the tool call {call_id!r} is not answered before the next message"
                )
                answers[call_id] = -1
            calls = entry.get("tool_calls") if role == "assistant" else None
            waiting = (
                [str(c.get("id")) for c in calls or [] if isinstance(c, dict)]
                if isinstance(calls, list)
                else []
            )
            for call_id in waiting:
                answers.setdefault(call_id, 0)
    for call_id, count in answers.items():
        if count == 0:
            problems.append(f"the call {call_id!r} is never answered")
    return problems


def messages_problems(entries: list[Json]) -> list[str]:
    """What Anthropic's Messages API refuses in `messages`: a role other than user and
    assistant (the system prompt goes in `system`), a first message that is not the user's,
    `tool_use` blocks not all answered by the `tool_result` blocks of the very next
    message (a user message), a `tool_result` for no `tool_use` of the message before it,
    a `tool_use` whose input is not an object."""
    problems: list[str] = []
    if entries and entries[0].get("role") != "user":
        problems.append("messages: the first message must use the user role")
    asked: list[str] = []  # the tool_use ids of the message before
    for n, entry in enumerate(entries):
        role = entry.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages.{n}.role: {str(role)[:20]!r} is not user or assistant")
        content = entry.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        answered = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        missing = [i for i in asked if i not in answered]
        if missing:
            problems.append(
                f"messages.{n}: tool_use ids were found without tool_result blocks "
                f"immediately after: {', '.join(missing)}"
            )
        strays = [i for i in answered if i not in asked]
        if strays:
            problems.append(
                f"messages.{n}: unexpected tool_use_id found in tool_result blocks: "
                + ", ".join(strays)
            )
        uses = [b for b in blocks if b.get("type") == "tool_use"] if role == "assistant" else []
        problems += [
            f"messages.{n}: the input of tool_use {b.get('id')!r} is not an object"
            for b in uses
            if not isinstance(b.get("input"), dict)
        ]
        asked = [str(b.get("id")) for b in uses]
    if asked:
        problems.append(f"tool_use ids were found without tool_result blocks: {', '.join(asked)}")
    return problems


def references_problems(body: Json) -> list[str]:
    """What Anthropic's Messages API refuses about its tool search: a `tool_reference` block
    (in a `tool_result`) naming no tool sent in `tools` with `defer_loading: true`, and tools
    that are all deferred."""
    found = body.get("tools")
    tools = [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []
    deferred = {t.get("name") for t in tools if t.get("defer_loading") is True}
    problems = []
    if tools and len(deferred) == len(tools):
        problems.append("tools: all tools have defer_loading; at least one must not be deferred")
    found = body.get("messages")
    for n, entry in enumerate(found if isinstance(found, list) else ()):
        content = entry.get("content") if isinstance(entry, dict) else None
        for block in content if isinstance(content, list) else ():
            inner = block.get("content") if isinstance(block, dict) else None
            if block.get("type") != "tool_result" or not isinstance(inner, list):
                continue
            problems += [
                f"messages.{n}: tool_reference {str(ref.get('tool_name'))[:60]!r} names no "
                "deferred tool (defer_loading: true) of this request"
                for ref in inner
                if isinstance(ref, dict)
                and ref.get("type") == "tool_reference"
                and ref.get("tool_name") not in deferred
            ]
    return problems


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_BLOCKS = ("text", "image", "document", "search_result", "tool_reference")


def _media_data_problem(media_type: Any, data: Any) -> str | None:
    """Why base64 `data` said to be `media_type` is refused, or None."""
    if not isinstance(data, str) or not data:
        return "has no data"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "is not valid base64"
    found = sniff(raw)
    if found is not None and found != media_type:
        return f"does not match the provided media type ({media_type}; the data is {found})"
    return None


def media_problems(path: str, entries: list[Json]) -> list[str]:
    """What the APIs refuse of media in tool results, by endpoint: chat completions takes
    text only in a `tool` message; the Messages API takes `text`, `image` (base64 JPEG,
    PNG, GIF or WebP, data matching its type), `document` (a base64 PDF) and a few other
    blocks in a `tool_result`, no empty text; the Responses API takes `input_text`,
    `input_image` (a URL or data URL) and `input_file` (with data, an id or a URL) in a
    `function_call_output`."""
    problems: list[str] = []
    for n, entry in enumerate(entries):
        if path.endswith("/chat/completions") and entry.get("role") == "tool":
            content = entry.get("content")
            if isinstance(content, list) and any(
                not isinstance(p, dict) or p.get("type") != "text" for p in content
            ):
                problems.append(
                    f"messages.[{n}].content: a tool message's content parts must be text "
                    "(images and files are only allowed in user messages)"
                )
        elif path.endswith("/messages"):
            content = entry.get("content")
            for block in content if isinstance(content, list) else ():
                inner = block.get("content") if isinstance(block, dict) else None
                if block.get("type") != "tool_result" or not isinstance(inner, list):
                    continue
                for item in inner:
                    problems += _block_problems(n, item)
        elif entry.get("type") == "function_call_output" and isinstance(entry.get("output"), list):
            for item in entry["output"]:
                problems += _output_problems(n, item)
    return problems


def _block_problems(n: int, block: Any) -> list[str]:
    where = f"messages.{n}.content.tool_result"
    kind = block.get("type") if isinstance(block, dict) else None
    if kind not in _BLOCKS:
        return [f"{where}: {str(kind)[:30]!r} is not a valid tool_result content block"]
    if kind == "text" and not block.get("text"):
        return [f"{where}: text content blocks must be non-empty"]
    if kind not in ("image", "document"):
        return []
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return [f"{where}: {kind} source must be base64 here"]
    media_type = source.get("media_type")
    allowed = _IMAGE_TYPES if kind == "image" else ("application/pdf",)
    if media_type not in allowed:
        return [f"{where}: {kind} media_type {str(media_type)[:40]!r} is not one of {allowed}"]
    problem = _media_data_problem(media_type, source.get("data"))
    return [] if problem is None else [f"{where}: the {kind} {problem}"]


def _output_problems(n: int, item: Any) -> list[str]:
    where = f"input[{n}].output"
    kind = item.get("type") if isinstance(item, dict) else None
    if kind == "input_text":
        return [] if isinstance(item.get("text"), str) else [f"{where}: input_text has no text"]
    if kind == "input_image":
        url = item.get("image_url")
        if item.get("file_id") or (isinstance(url, str) and url.startswith("http")):
            return []
        if not isinstance(url, str) or not url.startswith("data:"):
            return [f"{where}: input_image needs an image_url or a file_id"]
        head, _, data = url.partition(",")
        media_type = head[5:].removesuffix(";base64")
        if media_type not in _IMAGE_TYPES:
            return [f"{where}: input_image of type {media_type[:40]!r} is not supported"]
        problem = _media_data_problem(media_type, data)
        return [] if problem is None else [f"{where}: the image {problem}"]
    if kind == "input_file":
        if item.get("file_id") or item.get("file_url"):
            return []
        data = item.get("file_data")
        if not isinstance(data, str) or not data.startswith("data:"):
            return [f"{where}: input_file needs file_data (a data URL), a file_id or a file_url"]
        if not item.get("filename"):
            return [f"{where}: input_file with file_data needs a filename"]
        head, _, raw = data.partition(",")
        problem = _media_data_problem(head[5:].removesuffix(";base64"), raw)
        return [] if problem is None else [f"{where}: the file {problem}"]
    return [f"{where}: {str(kind)[:30]!r} is not input_text, input_image or input_file"]


def _echoed_arguments(entry: Json) -> list[Any]:
    """The arguments of the calls an assistant entry carries, as it was sent back."""
    if entry.get("type") == "function_call":
        return [entry.get("arguments")]
    if entry.get("role") != "assistant":
        return []
    found = []
    calls = entry.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found.append(function.get("arguments"))
    legacy = entry.get("function_call")
    if isinstance(legacy, dict):
        found.append(legacy.get("arguments"))
    return found


def _is_json_object(arguments: Any) -> bool:
    if isinstance(arguments, dict):
        return True
    if not isinstance(arguments, str):
        return False
    try:
        return isinstance(json.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def tool_names(body: Json) -> list[str]:
    """Names of the offered tools (chat ``tools``, Responses ``tools``, legacy ``functions``);
    a Responses ``namespace``'s functions as ``namespace.name``, its ``tool_search`` tool as
    ``tool_search``."""
    names: list[str] = []
    for entry in [*(body.get("tools") or []), *(body.get("functions") or [])]:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "namespace" and isinstance(entry.get("tools"), list):
            inside = [t for t in entry["tools"] if isinstance(t, dict)]
            names += [f"{entry.get('name')}.{t.get('name')}" for t in inside]
        elif entry.get("type") == "tool_search":
            names.append("tool_search")
        else:
            fn = entry.get("function")
            fn = fn if isinstance(fn, dict) else entry
            names.append(str(fn.get("name")))
    return names


def summary(path: str, body: Json) -> str:
    """One line a failing test can be read by: path, message roles, tools, tool_choice."""
    roles = []
    for m in messages(body):
        role = str(m.get("role", m.get("type")))
        ids = [str(tc.get("id")) for tc in m.get("tool_calls") or [] if isinstance(tc, dict)]
        ref = m.get("tool_call_id", m.get("call_id"))
        roles.append(role + (f"{ids}" if ids else "") + (f"({ref})" if ref else ""))
    return (
        f"  got: {path} messages=[{', '.join(roles)}] tools={tool_names(body)}"
        f" tool_choice={body.get('tool_choice')!r} stream={body.get('stream', False)!r}"
    )


def problems(path: str, body: Json, expected: Json) -> list[str]:
    """What differs between ``body`` and the ``expected`` checks (``None`` means unchecked)."""
    found: list[str] = []
    results = tool_results(body)
    want = {k: v for k, v in expected.items() if v is not None or k == "tool_choice"}
    if "path" in want and path != want["path"]:
        found.append(f"was sent to {path}, expected {want['path']}")
    if "model" in want and body.get("model") != want["model"]:
        found.append(f"has model {body.get('model')!r}, expected {want['model']!r}")
    if "stream" in want and (body.get("stream") is True) != want["stream"]:
        found.append("is not streamed" if want["stream"] else "is streamed")
    if "has_tools" in want and bool(tool_names(body)) != want["has_tools"]:
        found.append("has no tools" if want["has_tools"] else f"has tools {tool_names(body)}")
    if "tool_names" in want and sorted(tool_names(body)) != want["tool_names"]:
        found.append(f"offers tools {sorted(tool_names(body))}, expected {want['tool_names']}")
    if "tool_choice" in want and body.get("tool_choice") != want["tool_choice"]:
        found.append(
            f"has tool_choice {body.get('tool_choice')!r}, expected {want['tool_choice']!r}"
        )
    call_id = want.get("contains_tool_result")
    if call_id is not None:
        results = [(i, t) for i, t in results if i == call_id]
        if not results:
            found.append(f"contains no tool result for {call_id!r}")
    needle = want.get("tool_result_contains")
    if needle is not None and results and not any(needle in t for _, t in results):
        shown = [t[:80] for _, t in results]
        found.append(f"has no tool result containing {needle!r} (results: {shown})")
    elif needle is not None and not results and call_id is None:
        found.append(f"has no tool result containing {needle!r} (no tool results at all)")
    texts = [text_of(m.get("content", m.get("output"))) for m in messages(body)]
    texts += [text_of(body.get("instructions")), text_of(body.get("system"))]
    if "contains_text" in want and not any(want["contains_text"] in t for t in texts):
        found.append(f"contains no message with text {want['contains_text']!r}")
    if "message_count" in want and len(messages(body)) != want["message_count"]:
        found.append(f"has {len(messages(body))} message(s), expected {want['message_count']}")
    return found


def check_request(label: str, path: str, body: Json, expected: Json) -> None:
    """Raise one AssertionError naming every failed check of ``expected``."""
    found = problems(path, body, expected)
    if found:
        raise AssertionError(
            f"ScriptedServer: {label} " + "; ".join(found) + "\n" + summary(path, body)
        )
