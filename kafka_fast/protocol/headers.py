"""Request and response headers: which version an API uses, and their encoding.

Kafka picks the header version from the body version: request header v2 and response
header v1 once the API version is flexible, v1/v0 before. One exception is kept here:
ApiVersions responses always use response header v0 (a client must be able to read them
before it knows the broker's versions).
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_fast.errors import ProtocolError
from kafka_fast.protocol.messages import API_INDEX
from kafka_fast.protocol.primitives import read_tags, write_nullable_string

__all__ = [
    "request_header_version", "response_header_version", "encode_request_header",
    "write_request_header", "decode_response_header",
]

API_VERSIONS_KEY = 18

_hhi = struct.Struct(">hhi")
_pack_hhi = _hhi.pack
_unpack_i32 = struct.Struct(">i").unpack_from


def _entry(api_key: int) -> tuple:
    entry = API_INDEX.get(api_key)
    if entry is None:
        raise ProtocolError(f"unknown API key {api_key}")
    return entry


def request_header_version(api_key: int, api_version: int) -> int:
    """Header version (0, 1 or 2) of a request with this API key and version."""
    flexible_min = _entry(api_key)[2]
    return 2 if flexible_min is not None and api_version >= flexible_min else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Header version (0 or 1) of the response to a request with this API key and version."""
    flexible_min = _entry(api_key)[3]
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible_min is not None and api_version >= flexible_min else 0


def write_request_header(
    out: bytearray, api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> None:
    """Append the request header for this API key and version to ``out``."""
    header_version = request_header_version(api_key, api_version)
    out += _pack_hhi(api_key, api_version, correlation_id)
    if header_version >= 1:
        # ClientId keeps the classic int16-length string even in header v2.
        write_nullable_string(out, None, client_id)
        if header_version == 2:
            out.append(0)  # no tagged fields


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The request header for this API key and version."""
    out = bytearray()
    write_request_header(out, api_key, api_version, correlation_id, client_id)
    return bytes(out)


def decode_response_header(buf: Any, header_version: int) -> tuple[int, int]:
    """Read a response header from the start of ``buf`` (the frame without its size prefix).

    Returns ``(correlation_id, body_offset)``. Tagged header fields are skipped.
    """
    try:
        (correlation_id,) = _unpack_i32(buf, 0)
        if header_version == 0:
            return correlation_id, 4
        mv = buf if buf.__class__ is memoryview else memoryview(buf)
        if mv[4] == 0:
            return correlation_id, 5
        return correlation_id, read_tags(mv, 4, _Skipped(), None)
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(
            f"ResponseHeader v{header_version}: cannot decode: {type(exc).__name__}: {exc}"
        ) from None


class _Skipped:
    """Receives (and drops) the tagged fields of a response header."""

    __slots__ = ("unknown_tagged_fields",)
