"""Wire encoding of scripted turns: Chat Completions (plain and SSE), the Responses API and
Anthropic's Messages API.

Every answer starts as one Chat Completions assistant message (`chat_message`); the
other shapes are derived from it, so each builder works on every endpoint. Streams are
split the way real servers split them: text by words, tool-call arguments in small pieces,
with ``id``/``type``/``name`` only in the first fragment of each call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..jsonvalues import safe_json
from .turns import Turn

CREATED = 1_700_000_000
"""Fixed ``created`` timestamp, so answers are deterministic."""

PIECE = 8
"""Longest streamed piece of text or arguments, in characters."""

Json = dict[str, Any]


def split_text(text: str) -> list[str]:
    """Word-sized pieces (long words cut to `PIECE`) that join back to ``text``."""
    words: list[str] = re.findall(r"\s*\S+|\s+$", text)
    return [word[i : i + PIECE] for word in words for i in range(0, len(word), PIECE)]


def chat_message(turn: Turn, new_call_id: Callable[[], str]) -> Any:
    """The assistant message of ``turn``; calls without an id get ``new_call_id()``. A raw
    turn is its JSON as written (a list: Responses API output items)."""
    if turn.raw_json is not None:
        return json.loads(turn.raw_json)
    message: Json = {"role": "assistant", "content": turn.content, "refusal": None}
    if turn.kind == "function_call":
        only = turn.calls[0]
        message["function_call"] = {"name": only.name, "arguments": only.arguments}
    elif turn.calls:
        message["tool_calls"] = [
            {
                "id": c.id or new_call_id(),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in turn.calls
        ]
    return message


def chat_usage(turn: Turn) -> Json | None:
    if isinstance(turn.usage, tuple):
        prompt, completion = turn.usage
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return None if turn.usage is None else dict(json.loads(turn.usage))


def completion(turn: Turn, message: Json, *, rid: str, model: str) -> Json:
    """A ``chat.completion`` object."""
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish_reason}
    body: Json = {"id": rid, "object": "chat.completion", "created": CREATED, "model": model}
    body["choices"] = [choice]
    if turn.usage is not None:
        body["usage"] = chat_usage(turn)
    return body


def _deltas(message: Json) -> list[Json]:
    content = message.get("content")
    deltas: list[Json] = [{"role": "assistant", "content": "" if content is not None else None}]
    if isinstance(content, str):
        deltas += [{"content": piece} for piece in split_text(content)]
    for index, tc in enumerate(message.get("tool_calls") or []):
        fn = tc["function"]
        head = {"name": fn["name"], "arguments": ""}
        deltas.append(
            {"tool_calls": [{"index": index, "id": tc["id"], "type": "function", "function": head}]}
        )
        for piece in _pieces(fn["arguments"]):
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if fc := message.get("function_call"):
        deltas.append({"function_call": {"name": fc["name"], "arguments": ""}})
        deltas += [{"function_call": {"arguments": piece}} for piece in _pieces(fc["arguments"])]
    return deltas


def _pieces(arguments: str) -> list[str]:
    return [arguments[i : i + PIECE] for i in range(0, len(arguments), PIECE)]


def chunks(turn: Turn, message: Json, *, rid: str, model: str, include_usage: bool) -> list[Json]:
    """The ``chat.completion.chunk`` objects of a streamed answer (a raw message: one delta)."""

    def chunk(delta: Json, finish_reason: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        out: Json = {"id": rid, "object": "chat.completion.chunk", "created": CREATED}
        out.update(model=model, choices=[choice])
        if include_usage:
            out["usage"] = None
        return out

    deltas = [message] if turn.kind == "raw" else _deltas(message)
    out = [chunk(delta) for delta in deltas] + [chunk({}, turn.finish_reason)]
    if include_usage and turn.usage is not None:
        out.append({**chunk({}), "choices": [], "usage": chat_usage(turn)})
    return out


def sse_chat(chunk_list: list[Json]) -> list[bytes]:
    frames = [f"data: {json.dumps(safe_json(c), ensure_ascii=False)}\n\n" for c in chunk_list]
    return [frame.encode() for frame in [*frames, "data: [DONE]\n\n"]]


def input_items(found: Any) -> list[Json]:
    """A Responses API ``input``: a string is one user message, a list its item objects."""
    if isinstance(found, str):
        return [{"role": "user", "content": found}]
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def output_items(message: Any, *, rid: str, new_call_id: Callable[[], str]) -> list[Json]:
    """Responses API output items for a chat-shaped message (one with ``type``, or a list
    of items: verbatim)."""
    if isinstance(message, list):
        return message
    if "type" in message:
        return [message]
    items: list[Json] = []
    content = message.get("content")
    if isinstance(content, str):
        part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
        items.append(
            {"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant"}
            | {"content": [part]}
        )
    calls = [tc.get("function") or {} for tc in message.get("tool_calls") or []]
    ids = [tc.get("id") for tc in message.get("tool_calls") or []]
    if fc := message.get("function_call"):
        calls, ids = [fc], [new_call_id()]
    for n, (fn, call_id) in enumerate(zip(calls, ids, strict=True)):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{rid}_{n}",
                "call_id": call_id,
                "status": "completed",
            }
            | {"name": fn.get("name"), "arguments": fn.get("arguments")}
        )
    return items


def response_usage(turn: Turn) -> Json | None:
    if isinstance(turn.usage, tuple):
        prompt, completion = turn.usage
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
    return None if turn.usage is None else dict(json.loads(turn.usage))


def response(turn: Turn, items: list[Json], request: Json, *, rid: str, model: str) -> Json:
    """A Responses API ``response`` object; finish_reason length/content_filter: incomplete."""
    reason = {"length": "max_output_tokens", "content_filter": "content_filter"}
    incomplete = reason.get(turn.finish_reason or "")
    return {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": CREATED,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": request.get("instructions"),
        "metadata": {},
        "model": model,
        "output": items,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "temperature": None,
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
        "top_p": None,
        "usage": response_usage(turn),
    }


def response_events(resp: Json) -> list[Json]:
    """The streamed events of a Responses API answer, ending with ``response.completed``."""
    events: list[Json] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    emit(
        "response.created", response={**resp, "status": "in_progress", "output": [], "usage": None}
    )
    busy = {"status": "in_progress"}
    for out_index, item in enumerate(resp["output"]):
        at = {"item_id": item.get("id"), "output_index": out_index}
        if item.get("type") == "function_call":
            emit(
                "response.output_item.added",
                output_index=out_index,
                item={**item, **busy, "arguments": ""},
            )
            args = item.get("arguments") or ""
            for piece in _pieces(args):
                emit("response.function_call_arguments.delta", **at, delta=piece)
            emit(
                "response.function_call_arguments.done", **at, arguments=args, name=item.get("name")
            )
        else:
            emit(
                "response.output_item.added",
                output_index=out_index,
                item={**item, **busy, "content": []},
            )
            for part_index, part in enumerate(item.get("content") or []):
                where = {**at, "content_index": part_index}
                emit("response.content_part.added", **where, part={**part, "text": ""})
                text = part.get("text") or ""
                for piece in split_text(text):
                    emit("response.output_text.delta", **where, delta=piece, logprobs=[])
                emit("response.output_text.done", **where, text=text, logprobs=[])
                emit("response.content_part.done", **where, part=part)
        emit("response.output_item.done", output_index=out_index, item=item)
    emit(f"response.{resp['status']}", response=resp)
    return events


def sse_events(events: list[Json]) -> list[bytes]:
    return [
        f"event: {e['type']}\ndata: {json.dumps(safe_json(e), ensure_ascii=False)}\n\n".encode()
        for e in events
    ]


# -- the Messages API (Anthropic) --------------------------------------------------------------

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def anthropic_usage(turn: Turn) -> Json:
    if isinstance(turn.usage, tuple):
        prompt, completion = turn.usage
        return {"input_tokens": prompt, "output_tokens": completion}
    return {"input_tokens": 0, "output_tokens": 0} if turn.usage is None else json.loads(turn.usage)


def anthropic_message(turn: Turn, message: Any, *, rid: str, model: str) -> Json:
    """A Messages API ``message`` for a chat-shaped ``message`` (a raw turn's dict that has
    ``"content"`` as a list: its content blocks, verbatim). A call's arguments that are a
    JSON object become its ``input``; any others are sent as they are (a string)."""
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        blocks = message["content"]
    else:
        blocks = []
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and content:
            blocks.append({"type": "text", "text": content})
        found = message.get("tool_calls") or [] if isinstance(message, dict) else []
        legacy = message.get("function_call") if isinstance(message, dict) else None
        calls = [(c.get("id"), c.get("function") or {}) for c in found if isinstance(c, dict)]
        if isinstance(legacy, dict):
            calls.append((None, legacy))
        for n, (call_id, fn) in enumerate(calls):
            arguments = fn.get("arguments")
            try:
                decoded = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                decoded = arguments
            blocks.append(
                {"type": "tool_use", "id": call_id or f"toolu_{rid}_{n}", "name": fn.get("name")}
                | {"input": decoded if isinstance(decoded, dict) else arguments}
            )
    reason = turn.finish_reason or "stop"
    return {
        "id": f"msg_{rid}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _STOP_REASONS.get(reason, reason),
        "stop_sequence": None,
        "usage": anthropic_usage(turn),
    }


def anthropic_events(message: Json) -> list[Json]:
    """The streamed events of a Messages API answer, as the API sends them: text by words,
    a call's input as JSON text in small pieces."""
    usage = message.get("usage") or {}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[Json] = [
        {"type": "message_start", "message": {**start, "usage": {**usage, "output_tokens": 1}}},
        {"type": "ping"},
    ]
    for index, block in enumerate(message.get("content") or []):
        at = {"index": index}
        if block.get("type") == "tool_use":
            head = {**block, "input": {}}
            given = block.get("input")
            pieces = _pieces(given if isinstance(given, str) else json.dumps(given))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        elif block.get("type") == "text":
            head = {**block, "text": ""}
            pieces = split_text(block.get("text") or "")
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        else:
            head, deltas = block, []
        events.append({"type": "content_block_start", **at, "content_block": head})
        events += [{"type": "content_block_delta", **at, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", **at})
    stop = {"stop_reason": message.get("stop_reason"), "stop_sequence": None}
    output = {"output_tokens": usage.get("output_tokens", 0)}
    events.append({"type": "message_delta", "delta": stop, "usage": output})
    events.append({"type": "message_stop"})
    return events


def anthropic_error(turn: Turn) -> Json:
    """An error body of the Messages API."""
    return {"type": "error", "error": {"type": turn.error_type, "message": turn.content}}
