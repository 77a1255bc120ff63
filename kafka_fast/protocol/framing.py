"""Size-prefixed request frames and response parsing."""

from __future__ import annotations

import struct
from typing import Any

from kafka_fast.errors import ProtocolError
from kafka_fast.protocol import headers
from kafka_fast.protocol.base import Message, chunks_of
from kafka_fast.protocol.compat import decode_api_versions_response

__all__ = ["frame_request", "decode_response"]

_pack_into_i32 = struct.Struct(">i").pack_into


def frame_request(
    request: Message, api_version: int, correlation_id: int, client_id: str | None
) -> list:
    """The whole request frame (int32 size, header, body) as chunks for ``socket.sendmsg``.

    ``records`` values of at least ``primitives.RECORDS_CHUNK_MIN`` bytes are chunks of their
    own (not copied); everything else is in memoryview slices of one buffer.
    """
    api_key = request.API_KEY
    if api_key is None:
        raise ProtocolError(f"{request.NAME} is not a request")
    out = bytearray(4)
    headers.write_request_header(out, api_key, api_version, correlation_id, client_id)
    blobs: list = []
    request.encode_into(out, blobs, api_version)
    size = len(out) - 4
    for _, blob in blobs:
        size += blob.nbytes if blob.__class__ is memoryview else len(blob)
    _pack_into_i32(out, 0, size)
    return chunks_of(out, blobs)


def decode_response(frame: Any, response_cls: type[Message], api_version: int) -> tuple[int, Any]:
    """Decode a response frame (without its size prefix): ``(correlation_id, response)``.

    As Kafka's clients do, bytes after the response body are ignored (librdkafka's mock
    cluster sends one in Metadata v12 replies). ApiVersions responses get the version
    fallback of ``compat.decode_api_versions_response``.
    """
    api_key = response_cls.API_KEY
    if api_key is None:
        raise ProtocolError(f"{response_cls.NAME} is not an API response")
    header_version = headers.response_header_version(api_key, api_version)
    correlation_id, offset = headers.decode_response_header(frame, header_version)
    mv = frame if frame.__class__ is memoryview else memoryview(frame)
    if api_key == headers.API_VERSIONS_KEY:
        return correlation_id, decode_api_versions_response(mv[offset:], api_version)
    return correlation_id, response_cls.decode_from(mv, api_version, offset)[0]
