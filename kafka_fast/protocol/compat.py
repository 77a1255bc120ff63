"""Leniency real brokers need when decoding (what Kafka's own clients do too)."""

from __future__ import annotations

import struct
from typing import Any

from kafka_fast.errors import ProtocolError

__all__ = ["decode_api_versions_response"]

_unpack_i16 = struct.Struct(">h").unpack_from


def decode_api_versions_response(body: Any, version: int) -> Any:
    """Decode an ApiVersions response body sent in answer to a request of ``version``.

    A broker that does not support the requested ApiVersions version answers with error
    UNSUPPORTED_VERSION (35) in a v0 body, or (librdkafka's mock cluster) in a body that fits
    no version. As Kafka's clients do, fall back to v0, and failing that keep just the error
    code, so the caller can retry with a lower version. Decoding is strict here: a reply that
    only half fits (the mock's would yield a throttle time of 20 minutes) is not trusted.
    """
    from kafka_fast.protocol.messages import ApiVersionsResponse

    try:
        return ApiVersionsResponse.decode(body, version, strict=True)
    except ProtocolError as first:
        if version != 0:
            try:
                return ApiVersionsResponse.decode(body, 0, strict=True)
            except ProtocolError:
                pass
        if len(body) >= 2:
            (error_code,) = _unpack_i16(body, 0)
            if error_code != 0:
                return ApiVersionsResponse(error_code=error_code)
        raise first
