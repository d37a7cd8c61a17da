"""A tiny model for llama.cpp's llama-server, written as GGUF with the standard library only.

No weights can be downloaded here, so the tests make their own model: a llama-architecture
network whose attention and feed-forward weights are zero, so each next token depends on the
current token only (a bigram model), with the preferences set by hand:

- after the prompt (it ends with a newline): the word "Sunny", else `<tool_call>`, else the end;
- after "Sunny": the end, else `<tool_call>`;
- after `<tool_call>`: a newline (what the chat template's tool-call format wants next);
- after anything else: the end, else `<tool_call>`, else any printable character.

With `tool_choice` "required" (Anthropic's `{"type": "any"}`), llama-server's grammar allows
no end before a tool call, so the model says "Sunny", opens a tool call and the grammar writes
the JSON of the only call the tool's schema allows; otherwise it says "Sunny" and stops.
Sampled at temperature 0, every answer is the same.
"""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

_UINT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _INT32 = 4, 6, 7, 8, 9, 5
_ALIGNMENT = 32
_NORMAL, _UNKNOWN, _CONTROL, _BYTE = 1, 2, 3, 6  # llama.cpp's token types

WORD = "Sunny"
_CALL = "<tool_call>"
_WIDTH, _HEADS, _FEED_FORWARD = 64, 4, 64


def write_model(path: Path) -> Path:
    """Write the model to `path` (about 300 KB) and return `path`."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    kinds = [_UNKNOWN, _CONTROL, _CONTROL, *([_BYTE] * 256)]
    for code in range(32, 127):  # printable ASCII, the space as SentencePiece writes it
        tokens.append("\u2581" if code == 32 else chr(code))
        kinds.append(_NORMAL)
    tokens += [WORD, _CALL]
    kinds += [_NORMAL, _NORMAL]
    scores = [0.0 if kind != _NORMAL or len(t) > 1 else -1.0 for t, kind in zip(tokens, kinds)]
    end, word, call = 2, tokens.index(WORD), tokens.index(_CALL)
    newline, space = tokens.index("<0x0A>"), tokens.index("\u2581")
    # the context a token leaves for the next one: a dimension of the embedding each
    context = {newline: 1, word: 2, call: 3}
    preferences = [
        {end: 30.0, call: 20.0},  # after anything else
        {word: 40.0, call: 30.0, end: 20.0},  # after the prompt's last newline
        {end: 40.0, call: 30.0},  # after the word
        {newline: 40.0},  # after <tool_call>
    ]
    n, width = len(tokens), _WIDTH
    embedding = _zeros(n * width)
    output = _zeros(n * width)
    for token in range(n):
        embedding[token * width + context.get(token, 0)] = 1.0
        printable = 1.0 if kinds[token] == _NORMAL and token != space else 0.0
        for dim, wanted in enumerate(preferences):
            # RMS normalisation scales a one-hot row to sqrt(width) = 8: logits are these
            output[token * width + dim] = wanted.get(token, printable) / 8
    square, wide = width * width, width * _FEED_FORWARD
    tensors: dict[str, tuple[list[int], array[float]]] = {
        "token_embd.weight": ([width, n], embedding),
        "output_norm.weight": ([width], _ones(width)),
        "output.weight": ([width, n], output),
        "blk.0.attn_norm.weight": ([width], _ones(width)),
        "blk.0.attn_q.weight": ([width, width], _zeros(square)),
        "blk.0.attn_k.weight": ([width, width], _zeros(square)),
        "blk.0.attn_v.weight": ([width, width], _zeros(square)),
        "blk.0.attn_output.weight": ([width, width], _zeros(square)),
        "blk.0.ffn_norm.weight": ([width], _ones(width)),
        "blk.0.ffn_gate.weight": ([width, _FEED_FORWARD], _zeros(wide)),
        "blk.0.ffn_up.weight": ([width, _FEED_FORWARD], _zeros(wide)),
        "blk.0.ffn_down.weight": ([_FEED_FORWARD, width], _zeros(wide)),
    }
    metadata: dict[str, object] = {
        "general.architecture": "llama",
        "general.name": "toolreg-tiny-bigram",
        "general.alignment": _ALIGNMENT,
        "general.file_type": 0,  # all float32
        "llama.context_length": 4096,
        "llama.embedding_length": width,
        "llama.block_count": 1,
        "llama.feed_forward_length": _FEED_FORWARD,
        "llama.attention.head_count": _HEADS,
        "llama.attention.head_count_kv": _HEADS,
        "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.rope.dimension_count": width // _HEADS,
        "llama.vocab_size": n,
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.token_type": kinds,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": end,
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.add_bos_token": False,
    }
    path.write_bytes(_gguf(metadata, tensors))
    return path


def _zeros(count: int) -> array[float]:
    return array("f", bytes(4 * count))


def _ones(count: int) -> array[float]:
    return array("f", [1.0]) * count


def _text(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("<Q", len(raw)) + raw


def _entry(key: str, value: object) -> bytes:
    """One metadata key and its typed value (GGUF version 3)."""
    head = _text(key)
    if isinstance(value, bool):
        return head + struct.pack("<I?", _BOOL, value)
    if isinstance(value, int):
        return head + struct.pack("<II", _UINT32, value)
    if isinstance(value, float):
        return head + struct.pack("<If", _FLOAT32, value)
    if isinstance(value, str):
        return head + struct.pack("<I", _STRING) + _text(value)
    if not isinstance(value, list) or not value:
        raise TypeError(f"{key}: no GGUF type for {value!r}")
    first = value[0]
    if isinstance(first, str):
        body = b"".join(_text(v) for v in value)
        return head + struct.pack("<IIQ", _ARRAY, _STRING, len(value)) + body
    if isinstance(first, float):
        body = array("f", value).tobytes()
        return head + struct.pack("<IIQ", _ARRAY, _FLOAT32, len(value)) + body
    return head + struct.pack("<IIQ", _ARRAY, _INT32, len(value)) + array("i", value).tobytes()


def _gguf(metadata: dict[str, object], tensors: dict[str, tuple[list[int], array[float]]]) -> bytes:
    """The file: header, metadata, tensor descriptions (dimensions fastest first, float32),
    then the tensors' data, each at an offset aligned to `_ALIGNMENT`."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    head += b"".join(_entry(key, value) for key, value in metadata.items())
    blobs: list[bytes] = []
    offset = 0
    for name, (dims, data) in tensors.items():
        head += _text(name) + struct.pack(f"<I{len(dims)}Q", len(dims), *dims)
        head += struct.pack("<IQ", 0, offset)
        blob = data.tobytes()
        blob += bytes(-len(blob) % _ALIGNMENT)
        blobs.append(blob)
        offset += len(blob)
    head += bytes(-len(head) % _ALIGNMENT)
    return head + b"".join(blobs)
