"""Builds message objects with every field of a version set to a non-default value."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from kafka_fast.protocol import messages
from kafka_fast.protocol.base import Field, Message

INT_BASE = {
    "int8": 100, "int16": 30_000, "uint16": 60_000, "int32": 2_000_000_000,
    "uint32": 4_000_000_000, "int64": 1 << 50,
}


def all_message_classes() -> list[type[Message]]:
    return [getattr(messages, name) for name in sorted(messages.MODULES)]


def primitive_value(ftype: str, seed: int, default: Any) -> Any:
    if ftype == "bool":
        return not default
    if ftype in INT_BASE:
        value = INT_BASE[ftype] + seed % 20
        return value if value != default else value + 1
    if ftype == "float64":
        return 2.5 + seed
    if ftype == "string":
        return f"s{seed}-é"
    if ftype == "uuid":
        return UUID(int=(seed + 1) * 0x1000000000001)
    if ftype == "bytes":
        return bytes([seed % 256, 1, 2, 255])
    if ftype == "records":
        # Mix small values (copied into the frame) and large ones (sent as their own chunk).
        return bytes(range(256)) * (8 if seed % 2 else 1)
    raise ValueError(ftype)


def populated(cls: type, version: int, seed: int = 1, nulls: bool = False) -> Any:
    """An instance of ``cls`` with every field present at ``version`` set.

    With ``nulls`` true, fields nullable at ``version`` are None instead.
    """
    obj = cls()
    for i, f in enumerate(cls.FIELDS):
        if not f.present(version):
            continue
        setattr(obj, f.attr, field_value(f, version, seed * 31 + i, nulls))
    return obj


def field_value(f: Field, version: int, seed: int, nulls: bool) -> Any:
    if nulls and f.nullable(version):
        return None
    if f.type.startswith("[]"):
        elem = f.type[2:]
        if f.struct is not None:
            return [populated(f.struct, version, seed + k, nulls) for k in range(2)]
        return [primitive_value(elem, seed + k, None) for k in range(2)]
    if f.struct is not None:
        return populated(f.struct, version, seed, nulls)
    default = f.default() if callable(f.default) else f.default
    return primitive_value(f.type, seed, default)


def versions(cls: type) -> range:
    return range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
