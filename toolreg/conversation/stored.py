"""A conversation kept in a state store: `Conversation(..., state_store=, conversation_id=)`.

Each `send` and `resume` loads the stored state, runs, and saves what follows with the
version it loaded (compare-and-set: a concurrent writer's save is a `StateConflictError`).
What is stored is `export_state(key=...)`: signed when the conversation has a `key`, and
verified on load (an edited row is a `ConversationStateError`).

A pending approval resumes once, across processes:
1. the resumer claims the paused state (`claim("resume:<digest of the state's id>")`):
   a second resumer is told no (`StateConflictError`) before anything runs;
2. it saves the state marked "resumed" (compare-and-set on the version it loaded), so that
   the claim need not outlive the turn: a process that dies in the middle leaves that
   marker, and the next load says so instead of running the approved calls again;
3. it runs the approved calls and the rest of the turn, and saves what follows.

This module decides; the drivers only call the store (sync, or awaited).
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from typing import Any

from ..errors import StateConflictError, UsageError, with_article
from ..stores.base import AsyncStateStore, StateStore, StoredState, check_id
from .signing import signing_keys
from .state import Loaded, load_state

__all__ = ["RESUME_TTL", "Stored"]

RESUME_TTL = 86400.0
"""Seconds a resume's claim lasts (the "resumed" marker outlives it)."""

Message = dict[str, Any]


class Stored:
    """Where a conversation lives in a store: the store, the id, the signing keys, the
    version last loaded or saved, and the paused state a resume claims."""

    def __init__(
        self,
        store: Any,
        conversation_id: Any,
        key: Any,
        fresh: list[Message],
        *,
        asynchronous: bool,
    ) -> None:
        protocol = AsyncStateStore if asynchronous else StateStore
        if not isinstance(store, protocol):
            methods = "load, save, claim, delete"
            if asynchronous:
                methods = "aload, asave, aclaim, adelete"
            wanted = with_article(protocol.__name__)
            raise UsageError(
                f"state_store={type(store).__name__} is not {wanted} ({methods}): "
                "give a MemoryStore, SQLiteStore or RedisStore from toolreg.stores"
            )
        if conversation_id is None:
            raise UsageError(
                "state_store= needs conversation_id=: the id this conversation is stored "
                "under (e.g. the chat's id in your application)"
            )
        self.store: Any = store  # checked above: the driver's protocol
        self.id = check_id(conversation_id, "conversation_id")
        self.keys = signing_keys(key)
        self.fresh = copy.deepcopy(fresh)  # what a conversation starts with (system)
        self.version: int | None = None
        self.paused: dict[str, Any] | None = None  # the loaded state of a paused turn
        self.token = uuid.uuid4().hex
        self.unsaved = False  # a turn's save failed: the next send or resume saves it first
        self.unsaved_reply: Any = None  # that turn's reply

    def loaded(self, stored: StoredState | None) -> tuple[Loaded, dict[str, Any]] | None:
        """What was read, checked: the loaded state and its dict, or None for none."""
        self.paused = None
        if stored is None:
            self.version = None
            return None
        state = stored.state
        if state.get("status") == "resumed":
            raise StateConflictError(
                f"conversation {self.id!r} is being resumed by another process, or a resume "
                "of it did not finish (the process stopped after it claimed the pending "
                "calls, which may have run): check what they did, then delete it from the "
                "store to start again",
                id=self.id,
                found=stored.version,
            )
        loaded = load_state(state, self.keys)
        self.version = stored.version
        if loaded.turn is not None:
            self.paused = state
        return loaded, state

    def resumable(self) -> None:
        """A resume needs a paused turn in the store; none means someone resumed it."""
        if self.paused is None:
            raise StateConflictError(
                f"conversation {self.id!r} has no call waiting for approval (version "
                f"{self.version}): it was resumed already, by another request or process, "
                "or it never stopped for approval",
                id=self.id,
                found=self.version,
            )

    @property
    def claim(self) -> str:
        sid = self.paused.get("id") if self.paused is not None else None
        digest = hashlib.sha256(str(sid).encode("utf-8", "surrogatepass")).hexdigest()
        return f"resume:{digest[:40]}"

    def claimed(self, taken: bool) -> dict[str, Any]:
        """The claim's answer; the state to save as the "resumed" marker."""
        if not taken or self.paused is None:
            raise StateConflictError(
                f"conversation {self.id!r}: another process is resuming its pending calls, or "
                "has resumed them (they run once); load it again for what followed",
                id=self.id,
                expected=self.version,
            )
        return self.paused  # the driver marked it "resumed" when it began the resume

    def saved(self, version: int) -> None:
        self.version = version
        self.paused = None

    def state(self, chat: Any) -> dict[str, Any]:
        """What is stored for `chat`: its state, signed with the keys if there are any."""
        exported: dict[str, Any] = chat.export_state(key=self.keys)
        return exported
