"""``Message``: one record as delivered to callbacks and returned by ``poll``/``consume``
(compiled: ``kafka_fast._native._message``; twin: ``kafka_fast._pure.message``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._impl import load

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2

_impl, NATIVE = load("_message", "message")
if TYPE_CHECKING:
    from ._pure.message import Message as Message
else:
    Message = _impl.Message

__all__ = ["TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "TIMESTAMP_NOT_AVAILABLE",
           "Message"]
