"""Fetch responses as column arrays, read off the wire without the interpreter lock.

The consumer's Fetch requests carry ``decode_fetch`` as their response decoder: the compiled
reader (``kafka_fast._native._fetchwire``, twin ``kafka_fast._pure.fetchwire``) walks the
response once, with the lock released, into a ``FetchWire`` of per-partition columns whose
records stay memoryviews of the response buffer. A response the columns cannot hold (tagged
fields: diverging epoch, current leader, snapshot id, node endpoints) is read by the
generated codec instead and put in the same columns (``MessageWire``), so the fetcher sees
one shape.
"""

from __future__ import annotations

from typing import Any

from .._impl import load
from ..protocol import messages as m

_fetchwire, NATIVE = load("_fetchwire", "fetchwire")
parse_fetch = _fetchwire.parse_fetch
#: The Fetch versions the reader handles (the consumer sends no older one).
MIN_VERSION: int = _fetchwire.MIN_VERSION
MAX_VERSION: int = _fetchwire.MAX_VERSION
#: From this version topics are named by ID (KIP-516).
TOPIC_ID_VERSION = 13


class MessageWire:
    """The columns of a ``FetchWire`` taken from a FetchResponse the generated codec decoded
    (same attributes and methods; the columns are lists)."""

    def __init__(self, resp: Any, version: int) -> None:
        self.version = version
        self.throttle_time_ms: int = resp.throttle_time_ms
        self.error_code: int = resp.error_code
        self.session_id: int = resp.session_id
        self.topics: list[Any] = []
        cols: dict[str, list[int]] = {name: [] for name in (
            "topic_index", "partition_index", "partition_error", "high_watermark",
            "last_stable_offset", "log_start_offset", "preferred_read_replica",
            "records_len", "aborted_count")}
        self._records: list[Any] = []
        self._aborted: list[list[tuple[int, int]] | None] = []
        by_id = version >= TOPIC_ID_VERSION
        for t, topic in enumerate(resp.responses):
            self.topics.append(topic.topic_id if by_id else topic.topic)
            for pd in topic.partitions:
                aborted = None if pd.aborted_transactions is None else [
                    (a.producer_id, a.first_offset) for a in pd.aborted_transactions]
                for name, value in (
                        ("topic_index", t), ("partition_index", pd.partition_index),
                        ("partition_error", pd.error_code),
                        ("high_watermark", pd.high_watermark),
                        ("last_stable_offset", pd.last_stable_offset),
                        ("log_start_offset", pd.log_start_offset),
                        ("preferred_read_replica", pd.preferred_read_replica),
                        ("records_len", -1 if pd.records is None else len(pd.records)),
                        ("aborted_count", -1 if aborted is None else len(aborted))):
                    cols[name].append(value)
                self._records.append(pd.records)
                self._aborted.append(aborted)
        self.topic_index = cols["topic_index"]
        self.partition_index = cols["partition_index"]
        self.partition_error = cols["partition_error"]
        self.high_watermark = cols["high_watermark"]
        self.last_stable_offset = cols["last_stable_offset"]
        self.log_start_offset = cols["log_start_offset"]
        self.preferred_read_replica = cols["preferred_read_replica"]
        self.records_len = cols["records_len"]
        self.aborted_count = cols["aborted_count"]

    def __len__(self) -> int:
        return len(self.topic_index)

    def records(self, i: int) -> Any:
        return self._records[i]

    def aborted_transactions(self, i: int) -> list[tuple[int, int]] | None:
        return self._aborted[i]


def decode_fetch(body: Any, version: int, nogil_bytes: int = -1) -> Any:
    """``body`` (a FetchResponse at ``version``) in columns: a ``FetchWire``, or a
    ``MessageWire`` for a response the columns cannot hold. A body of at least
    ``nogil_bytes`` bytes (if >= 0) is walked without the interpreter lock."""
    wire = parse_fetch(body, version, nogil_bytes)
    if wire is None:
        return MessageWire(m.FetchResponse.decode(body, version), version)
    return wire


def plain(wire: Any) -> tuple:
    """A ``FetchWire``'s or ``MessageWire``'s columns as plain values, to compare or show:
    ``((throttle, error, session), [(topic, partition, error, high watermark, last stable
    offset, log start, preferred replica, records bytes or None, aborted or None), ...])``."""
    rows = []
    for i in range(len(wire)):
        records = wire.records(i)
        rows.append((wire.topics[wire.topic_index[i]], wire.partition_index[i],
                     wire.partition_error[i], wire.high_watermark[i],
                     wire.last_stable_offset[i], wire.log_start_offset[i],
                     wire.preferred_read_replica[i],
                     None if records is None else bytes(records),
                     wire.aborted_transactions(i)))
    return (wire.throttle_time_ms, wire.error_code, wire.session_id), rows


def as_wire(resp: Any, version: int) -> Any:
    """``resp`` in columns: a FetchResponse message becomes a ``MessageWire``."""
    if isinstance(resp, m.FetchResponse):
        return MessageWire(resp, version)
    return resp
