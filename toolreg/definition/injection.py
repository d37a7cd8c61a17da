"""Descriptions that read as instructions to the model rather than about the tool.

A tool's description goes into the model's context as it is: a server (or a dependency)
that writes "ignore previous instructions", "do not tell the user" or a fake `<system>`
block there is talking to the model over the application's head ("tool poisoning", a
prompt injection). `instructions_to_model(text)` finds the phrasings such attacks use; a
description that says what the tool does and when to use it ("Use it when the user asks
for the weather") matches none. `toolreg lint` reports a match as a warning, and a mount
logs a WARNING for a remote tool whose description (or a parameter's) matches.

The list is short on purpose, each pattern an attack's phrasing that a description of a
tool has no reason to use (English, Chinese, Japanese). It is a tripwire, not a filter: a
paraphrase gets through, so remote tools stay confirmed and pinned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["MAX_SCANNED", "instructions_to_model", "schema_descriptions"]

MAX_SCANNED: Final = 20_000
"""Characters of one description looked at, at most."""
_MAX_PARAMETERS = 200  # of one schema looked at, at most

_PRIOR = r"(?:previous|prior|above|earlier|preceding|foregoing|system|other|all)"
_RULES = r"(?:instructions?|prompts?|rules|directions|guidelines|messages|context)"
_TELL = r"(?:tell|inform|mention|reveal|show|disclose|notify|alert|say)"
_ACT = r"(?:call|use|run|invoke|execute)"
_PATTERNS: Final = [
    # "ignore (all) previous instructions", "disregard the above rules"
    rf"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|of|these)\s+)*"
    rf"{_PRIOR}\s+{_RULES}\b",
    # "you must always call", "you must never", "you should always"
    r"\byou\s+(?:must|should|have\s+to|need\s+to|are\s+required\s+to)\s+(?:always|never)\b",
    # "always call this tool first / before any other tool"
    rf"\b(?:always|must)\s+{_ACT}\s+this\s+(?:tool|function)\s+"
    r"(?:first|before\s+(?:any|every|all|anything))\b",
    # "do not tell the user", "without informing the user", "the user must not know"
    rf"\b(?:do\s+not|don't|never)\s+{_TELL}\s+(?:this\s+to\s+|it\s+to\s+|anything\s+to\s+)?"
    r"the\s+user\b",
    rf"\bwithout\s+(?:{_TELL}(?:ing)?|asking)\s+the\s+user\b",
    r"\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out|be\s+told)\b",
    # fake turns and chat-template markers: <system>, </instructions>, <|im_start|>, [SYSTEM]
    r"<\s*/?\s*(?:system|instructions?|important|admin|assistant|developer)\s*>",
    r"<\|\s*(?:im_start|im_end|system|endoftext|begin_of_text)\s*\|>",
    # words addressed to the model: "Note to the AI:", "you are now", "new instructions:"
    r"\b(?:note|instructions?)\s+(?:to|for)\s+(?:the\s+)?"
    r"(?:ai|assistant|model|llm|agent|claude|gpt|chatgpt)\s*:",
    r"\byou\s+are\s+now\s+(?:a|an|in|the)\b",
    r"\bnew\s+instructions\s*:",
    r"\b(?:your|the)\s+system\s+prompt\b",
    # Chinese: 忽略之前的指令, 不要告诉用户, 你必须始终
    r"(?:忽略|无视|忽视)(?:掉)?(?:之前|以上|上面|前面|先前|所有|全部)的?(?:所有)?(?:指令|指示|提示|规则|要求)",
    r"(?:不要|别|切勿|不得)(?:告诉|告知|透露给|通知|提醒)(?:用户|使用者)",
    r"你(?:必须|一定要)(?:总是|始终|永远)",
    # Japanese: 以前の指示を無視, ユーザーに伝えないで
    r"(?:以前|前|上記|これまで)の(?:指示|命令|ルール)を無視",
    r"ユーザー(?:に|には)(?:言わ|伝え|知らせ|教え)ない",
]
_FOUND: Final = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
# case matters here: "IMPORTANT:" and "[SYSTEM]" in capitals, shouted at the model, not
# "Important: amounts are in cents"
_SHOUTED: Final = re.compile(r"(?<![A-Za-z])IMPORTANT\s*[:!]|\[\s*(?:SYSTEM|/?INST)\s*\]")
_MAX_SHOWN = 60


def instructions_to_model(text: str) -> list[str]:
    """The phrases of `text` that read as instructions to the model, each as written (at
    most 60 characters, in the order found); [] for an ordinary description."""
    if not isinstance(text, str) or not text:
        return []
    text = " ".join(text[:MAX_SCANNED].split())
    found = sorted(
        [*_FOUND.finditer(text), *_SHOUTED.finditer(text)], key=lambda match: match.start()
    )
    shown = []
    for match in found:
        phrase = match.group(0)
        phrase = phrase if len(phrase) <= _MAX_SHOWN else phrase[: _MAX_SHOWN - 3] + "..."
        if phrase not in shown:
            shown.append(phrase)
    return shown


def schema_descriptions(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """`(parameter, description)` of a JSON Schema's top-level properties that have one."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for count, (name, value) in enumerate(properties.items()):
        if count >= _MAX_PARAMETERS:
            return
        if isinstance(value, Mapping) and isinstance(value.get("description"), str):
            yield str(name), value["description"]
