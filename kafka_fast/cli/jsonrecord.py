"""The JSON record shape ``consume --format json`` writes and ``produce --format json`` reads.

One record per line::

    {"topic": "t", "partition": 0, "offset": 5, "timestamp": 1700000000000,
     "key": "text" | {"base64": "..."} | null,
     "value": "text" | {"base64": "..."} | null,
     "headers": [["name", "text" | {"base64": "..."} | null], ...]}

Bytes that are valid UTF-8 are written as a string, any other bytes as ``{"base64": ...}``;
null and empty (``""``) stay distinct. Reading accepts the same shape (topic, partition,
offset and timestamp are ignored), so ``consume --format json | produce --format json``
stores the original bytes. For hand-written input, any other JSON value (a number, a list,
an object that is not ``{"base64": ...}``) is stored as its compact JSON text, and headers
may also be an object ``{"name": value}``.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

Headers = list[tuple[str, bytes | None]]


class RecordError(ValueError):
    """An input line that is not a record of this shape."""


def encode_bytes(data: bytes | None) -> Any:
    """``data`` as its JSON form: null, a string, or ``{"base64": ...}``."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(value: Any, what: str) -> bytes | None:
    """The bytes a JSON field stands for (the inverse of ``encode_bytes``)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise RecordError(f"{what}: a lone surrogate is not text; use base64") from None
    if isinstance(value, dict) and list(value) == ["base64"]:
        if not isinstance(value["base64"], str):
            raise RecordError(f"{what}: base64 must be a string")
        try:
            return base64.b64decode(value["base64"], validate=True)
        except binascii.Error as exc:
            raise RecordError(f"{what}: bad base64 ({exc})") from None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def encode_record(msg: Any) -> str:
    """One consumed message as a JSON line (without the newline)."""
    return json.dumps({
        "topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
        "timestamp": msg.timestamp()[1], "key": encode_bytes(msg.key()),
        "value": encode_bytes(msg.value()),
        "headers": [[name, encode_bytes(v)] for name, v in (msg.headers() or [])],
    })


def decode_record(line: bytes) -> tuple[bytes | None, bytes | None, Headers]:
    """``(key, value, headers)`` from one JSON line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise RecordError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object")
    raw = obj.get("headers") or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    if not isinstance(pairs, (list, type({}.items()))):
        raise RecordError("headers must be an object or a list of [name, value] pairs")
    headers: Headers = []
    pair: object
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 \
                or not isinstance(pair[0], str):
            raise RecordError("headers must be an object or a list of [name, value] pairs")
        headers.append((pair[0], decode_bytes(pair[1], f"header {pair[0]!r}")))
    return decode_bytes(obj.get("key"), "key"), decode_bytes(obj.get("value"), "value"), headers
