"""``Message``: one record as delivered to callbacks and returned by ``poll``/``consume``
(compiled: ``kafka_fast._native._message``; twin: ``kafka_fast._pure.message``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._impl import load

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2

if TYPE_CHECKING:
    from ._pure.message import Message as Message
    from ._pure.message import build as build


def __getattr__(name: str) -> Any:
    """``Message``, ``build``, ``NATIVE`` and ``_impl``, loaded on first use: code that needs
    only the constants (``import kafka_fast``, the Spark data source's driver side) does not
    load the compiled module."""
    if name not in ("Message", "build", "NATIVE", "_impl"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    impl, native = load("_message", "message")
    globals().update(Message=impl.Message, build=impl.build, NATIVE=native, _impl=impl)
    return globals()[name]

__all__ = ["TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "TIMESTAMP_NOT_AVAILABLE",
           "Message", "build"]
