"""Checks and conversions of produce() arguments, with TypeErrors that name the argument."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

Headers = list[tuple[str, bytes | None]]


#: Record timestamps accepted (milliseconds; the same bound as produce()'s compiled path, so
#: that the deltas inside a batch always fit the record format's signed 64-bit fields).
MAX_TIMESTAMP = (1 << 62) - 1


def as_bytes(obj: Any, what: str) -> bytes | None:
    """``obj`` as bytes: str is utf-8 encoded, objects with the buffer protocol (bytearray,
    memoryview, numpy arrays, ...) are copied as their raw bytes, None stays None."""
    if obj is None or type(obj) is bytes:
        return obj
    if isinstance(obj, str):
        return obj.encode("utf-8")
    if isinstance(obj, bytes):
        return bytes(obj)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{what} must be bytes, str or None, not {type(obj).__name__}"
                        ) from None
    with view:
        return view.tobytes()


def as_headers(headers: Any, what: str = "headers") -> Headers | None:
    """Headers given as a list of ``(name, value)`` pairs or a dict, as a list of
    ``(str, bytes | None)`` tuples (None when there are none)."""
    if headers is None:
        return None
    pairs: Iterable[Any]
    if isinstance(headers, Mapping):
        pairs = headers.items()
    elif isinstance(headers, (list, tuple)):
        pairs = headers
    else:
        raise TypeError(
            f"{what} must be a list of (name, value) tuples or a dict, "
            f"not {type(headers).__name__}"
        )
    out: Headers = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"{what} entries must be (name, value) tuples, got {pair!r}")
        name, value = pair
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        elif not isinstance(name, str):
            raise TypeError(f"{what} names must be str, not {type(name).__name__}")
        out.append((name, as_bytes(value, f"{what} value of {name!r}")))
    return out or None


def is_integral(obj: Any) -> bool:
    """An int or numpy integer (not a bool: True is no timestamp or partition)."""
    if type(obj) is int:
        return True
    return isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_))


def _integer(obj: Any, what: str, meaning: str) -> int:
    if type(obj) is int:
        return obj
    if not is_integral(obj):
        raise TypeError(f"{what} must be an int{meaning}, not {type(obj).__name__}")
    return operator.index(obj)


def as_timestamp(timestamp: Any) -> int:
    """A record timestamp in milliseconds since the epoch (0 means "now")."""
    timestamp = _integer(timestamp, "timestamp", " (milliseconds since the epoch)")
    if timestamp < 0:
        raise ValueError(f"timestamp must not be negative (got {timestamp})")
    if timestamp > MAX_TIMESTAMP:
        raise OverflowError(f"timestamp {timestamp} is out of range (at most {MAX_TIMESTAMP} "
                            "milliseconds since the epoch)")
    return timestamp


def as_partition(partition: Any) -> int:
    """A partition number (-1 lets the partitioner choose). Other negative numbers are kept:
    they fail with _UNKNOWN_PARTITION like any partition the topic does not have."""
    partition = _integer(partition, "partition", "")
    if not -(1 << 31) <= partition < (1 << 31):
        raise OverflowError(f"partition {partition} is out of range (a 32-bit int)")
    return partition


def as_timeout(timeout: Any) -> float | None:
    """A wait in seconds: None or a negative number means no limit."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, "
                        f"not {type(timeout).__name__}")
    return None if timeout < 0 else float(timeout)


def as_callback(cb: Any, what: str = "on_delivery") -> Any:
    """A delivery callback or None."""
    if cb is not None and not callable(cb):
        raise TypeError(f"{what} must be callable, not {type(cb).__name__}")
    return cb


def as_topic(topic: Any) -> str:
    """A non-empty topic name."""
    if type(topic) is not str:
        raise TypeError(f"topic must be a str, not {type(topic).__name__}")
    if not topic:
        raise ValueError("topic must not be empty")
    return topic
