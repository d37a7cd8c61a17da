"""The conversation driver: the tool-calling loop over any OpenAI-compatible endpoint.

```python
client = openai.OpenAI(base_url="http://localhost:8000/v1", api_key="none")
chat = Conversation(client, "qwen2.5-7b-instruct", system="You are a helpful assistant.")
reply = chat.send("What's the weather in Beijing?")
print(reply.text, reply.stop_reason, reply.usage.total_tokens)
```

The loop itself lives in `loop` (no I/O); this module only talks to the client and runs
the tools. Transient endpoint failures are retried by the SDK's own `max_retries` (set it
on the client); toolreg adds no second retry layer. `openai` is never imported here at
module level: `import toolreg` stays light.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

from ..dispatch import ConfirmCallback
from ..errors import ConversationError, UsageError
from ..formats import DIALECTS
from ..registry import ToolRegistry, default_registry
from ..result import ToolCall, ToolResult
from .loop import LoopSettings, Step, run_loop
from .output import OutputSpec
from .reply import Hooks, Reply
from .stream import StreamAssembler, normalize_completion
from .tracing import model_call, turn

if TYPE_CHECKING:
    import openai

__all__ = ["AsyncConversation", "Conversation", "run_conversation"]

Message = dict[str, Any]


class _Base:
    def __init__(
        self,
        client: Any,
        model: str,
        *,
        registry: ToolRegistry | None = None,
        tools: str | Sequence[str] | None = None,
        system: str | None = None,
        max_rounds: int = 8,
        parallel: bool = True,
        strict: bool = False,
        context: Any = None,
        confirm: ConfirmCallback | None = None,
        dialect: str = "tools",
        name: str = "toolreg",
        hooks: Hooks | None = None,
        tool_choice: str = "auto",
        final_call: Literal["tool_choice_none", "drop_tools"] = "tool_choice_none",
        assistant_content: Literal["empty", "null", "omit"] = "empty",
        stream: bool = False,
        on_text: Callable[[str], None] | None = None,
        output_retries: int = 2,
        max_history_messages: int | None = None,
        max_history_chars: int | None = None,
        **request_options: Any,
    ) -> None:
        _check_options(dialect, max_rounds, output_retries, final_call, assistant_content)
        self.client = client
        self.model = model
        self.name = name
        self.registry = registry if registry is not None else default_registry
        self.tool_filter = None if tools is None else _tool_filter(self.registry, tools)
        self.parallel = parallel
        self.strict = strict
        self.context = context
        self.confirm = confirm
        self.stream = stream
        self.on_text = on_text
        self.messages: list[Message] = [{"role": "system", "content": system}] if system else []
        if tool_choice not in ("auto", "none", "required", *self.offered_names()):
            raise UsageError(
                f"tool_choice={tool_choice!r} is neither auto, none, required nor a tool offered "
                f"to the model ({', '.join(self.offered_names()) or 'none offered'})"
            )
        self._settings = LoopSettings(
            model=model,
            fmt=DIALECTS[dialect],
            tools=self._tool_definitions,
            tool_choice=tool_choice,
            max_rounds=max_rounds,
            final_call=final_call,
            assistant_content=assistant_content,
            request_options=request_options,
            output_retries=output_retries,
            max_history_messages=max_history_messages,
            max_history_chars=max_history_chars,
            hooks=hooks or Hooks(),
        )
        self._settings.dialect.choice(tool_choice)  # one the dialect cannot express fails now

    def offered_names(self) -> list[str]:
        """The tools offered to the model: `tools=` entries are tool names or tags."""
        if self.tool_filter is None:
            return self.registry.names()
        wanted = set(self.tool_filter)
        return [t.name for t in self.registry.tools() if t.name in wanted or t.tags & wanted]

    def _tool_definitions(self) -> list[dict[str, Any]]:
        names = self.offered_names()
        if not names:
            return []
        fmt = self._settings.fmt.name
        return self.registry.get_tools(fmt, strict=self.strict or None, names=names)

    def _settings_for(self, output_type: Any) -> LoopSettings:
        if output_type is None:
            return self._settings
        spec = OutputSpec.for_type(output_type)
        return dataclasses.replace(self._settings, output=spec)

    def _stream_kwargs(self) -> dict[str, Any]:
        if not self.stream:
            return {}
        if "stream_options" in self._settings.request_options:
            return {"stream": True}
        return {"stream": True, "stream_options": {"include_usage": True}}


def _check_options(
    dialect: str, max_rounds: int, output_retries: int, final_call: str, assistant_content: str
) -> None:
    if dialect not in DIALECTS:
        raise UsageError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
    if max_rounds < 0:
        raise UsageError("max_rounds must be >= 0")
    if output_retries < 0:
        raise UsageError("output_retries must be >= 0")
    if final_call not in ("tool_choice_none", "drop_tools"):
        raise UsageError(
            f'final_call must be "tool_choice_none" or "drop_tools", not {final_call!r}'
        )
    if assistant_content not in ("empty", "null", "omit"):
        raise UsageError(
            f'assistant_content must be "empty", "null" or "omit", not {assistant_content!r}'
        )


def _tool_filter(registry: ToolRegistry, tools: str | Sequence[str]) -> list[str]:
    """`tools=` as a list (one str is one entry); an entry that is no name and no tag fails."""
    wanted = [tools] if isinstance(tools, str) else list(tools)
    tags = {tag for tool in registry.tools() for tag in tool.tags}
    unknown = [w for w in wanted if w not in registry and w not in tags]
    if unknown:
        raise UsageError(
            f"tools={wanted!r}: {', '.join(map(repr, unknown))} is neither a registered tool "
            f"nor a tag; registered: {', '.join(registry.names()) or 'none'}"
        )
    return wanted


def _endpoint_error(exc: Exception) -> ConversationError:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    message = message or getattr(exc, "message", None) or str(exc)
    if status is not None:
        return ConversationError(
            f"the endpoint answered HTTP {status}: {message}", status_code=status
        )
    return ConversationError(f"the endpoint failed: {type(exc).__name__}: {message}")


_TRANSPORT_MODULES = ("openai", "httpx", "httpcore")  # httpx2 too


@contextlib.contextmanager
def _endpoint_errors() -> Iterator[None]:
    """Failures of the endpoint (the SDK's errors) become `ConversationError`s."""
    try:
        yield
    except ConversationError:
        raise
    except Exception as exc:
        if _is_sdk_error(exc):
            raise _endpoint_error(exc) from exc
        raise


def _is_sdk_error(exc: Exception) -> bool:
    """Raised by the SDK or its transport, or a body that is not JSON (a malformed answer).

    Anything else (a TypeError for an unknown request option, an error in `on_text`)
    propagates unchanged: it is a bug to fix, not an endpoint failure.
    """
    if isinstance(exc, json.JSONDecodeError):
        return True
    return any(cls.__module__.startswith(_TRANSPORT_MODULES) for cls in type(exc).__mro__)


class Conversation(_Base):
    """A conversation over a sync `openai.OpenAI` client (see the module docstring)."""

    client: openai.OpenAI

    def send(self, text: str, *, output_type: Any = None) -> Reply:
        """Add a user message and run the loop; the history is kept only if it succeeds."""
        reply = self.run(
            [*self.messages, {"role": "user", "content": text}], output_type=output_type
        )
        self.messages = reply.messages
        return reply

    def run(self, messages: Iterable[Message], *, output_type: Any = None) -> Reply:
        """Run the loop on `messages` (not modified) and return the reply."""
        loop = run_loop(self._settings_for(output_type), list(messages))
        with turn(self.name, self.model):
            return self._drive(loop)

    def _drive(self, loop: Generator[Step, Any, Reply]) -> Reply:
        step = next(loop)
        parent: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        while True:
            kind, payload = step
            answer: Any
            if kind == "model":
                with model_call(payload, self.client) as call:
                    answer = call.response = self._model(payload)
                parent = call.parent
            else:
                with parent():
                    answer = self._tools(payload)
            try:
                step = loop.send(answer)
            except StopIteration as done:
                reply: Reply = done.value
                return reply

    def _model(self, request: dict[str, Any]) -> dict[str, Any]:
        with _endpoint_errors():
            response = self.client.chat.completions.create(**request, **self._stream_kwargs())
            if not self.stream:
                return normalize_completion(response)
            assembler = StreamAssembler(self.on_text)
            try:
                for chunk in response:
                    assembler.feed(chunk)
            finally:
                response.close()  # also when on_text raised: release the connection
            return assembler.result()

    def _tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        allowed = self.offered_names()
        kwargs = {"context": self.context, "allowed": allowed, "confirm": self.confirm}
        if self.parallel:
            return self.registry.dispatch_many(calls, **kwargs)
        return [
            self.registry.dispatch_tool(c.name, c.arguments, call_id=c.call_id, **kwargs)
            for c in calls
        ]


class AsyncConversation(_Base):
    """The same loop over `openai.AsyncOpenAI`; tools run via `adispatch_many`."""

    client: openai.AsyncOpenAI

    async def send(self, text: str, *, output_type: Any = None) -> Reply:
        messages = [*self.messages, {"role": "user", "content": text}]
        reply = await self.run(messages, output_type=output_type)
        self.messages = reply.messages
        return reply

    async def run(self, messages: Iterable[Message], *, output_type: Any = None) -> Reply:
        loop = run_loop(self._settings_for(output_type), list(messages))
        with turn(self.name, self.model):
            return await self._drive(loop)

    async def _drive(self, loop: Generator[Step, Any, Reply]) -> Reply:
        step = next(loop)
        parent: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        while True:
            kind, payload = step
            answer: Any
            if kind == "model":
                with model_call(payload, self.client) as call:
                    answer = call.response = await self._model(payload)
                parent = call.parent
            else:
                with parent():
                    answer = await self._tools(payload)
            try:
                step = loop.send(answer)
            except StopIteration as done:
                reply: Reply = done.value
                return reply

    async def _model(self, request: dict[str, Any]) -> dict[str, Any]:
        with _endpoint_errors():
            response = await self.client.chat.completions.create(**request, **self._stream_kwargs())
            if not self.stream:
                return normalize_completion(response)
            assembler = StreamAssembler(self.on_text)
            try:
                async for chunk in response:
                    assembler.feed(chunk)
            finally:
                await response.close()
            return assembler.result()

    async def _tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        allowed = self.offered_names()
        kwargs = {"context": self.context, "allowed": allowed, "confirm": self.confirm}
        if self.parallel:
            return await self.registry.adispatch_many(calls, **kwargs)
        return [
            await self.registry.adispatch_tool(c.name, c.arguments, call_id=c.call_id, **kwargs)
            for c in calls
        ]


def run_conversation(
    client: Any,
    model: str,
    prompt: str | Sequence[Message],
    **options: Any,
) -> Reply:
    """One-shot: a `Conversation` with `options`, run on a prompt or a message list.

    `system=` goes first in either case (give it only when the list has no system message).
    """
    output_type = options.pop("output_type", None)
    conversation = Conversation(client, model, **options)
    if isinstance(prompt, str):
        return conversation.send(prompt, output_type=output_type)
    return conversation.run([*conversation.messages, *prompt], output_type=output_type)
