"""Produce requests framed by the compiled module (and its twin), sent to Apache Kafka at every
Produce version it speaks; its responses parsed into columns equal the generated decoder's
fields, and the records read back sit at the offsets the responses gave."""

from __future__ import annotations

import time

import pytest

from kafka_fast.producer import wire
from kafka_fast.protocol import headers
from kafka_fast.protocol.messages import ProduceRequest, ProduceResponse

from .raw_client import RawConnection
from .test_produce_wire import _as_rows, _columns_of, _impls
from .test_real_brokers import (
    _fetch_partition,
    api_ranges,
    batch_of,
    make_topic,
    metadata,
    read_records,
)

NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
PARTITIONS = 3


def _send(conn: RawConnection, impl, version: int, topics: list, txn_id=None, acks=-1):
    """One Produce request framed by ``impl``: the response body."""
    corr = conn.next_correlation_id()
    chunks = impl.frame_produce(version, corr, "kafka-fast-test", txn_id, acks, 10_000, topics,
                                **wire.request_layout(version))
    frame = conn.exchange(chunks)
    got, offset = headers.decode_response_header(
        frame, headers.response_header_version(0, version))
    assert got == corr
    return frame[offset:]


@pytest.mark.parametrize("impl", _impls())
def test_produce_to_apache_kafka_at_every_version(kafka, impl):
    low, high = api_ranges(kafka)[0]
    versions = [v for v in range(3, 14) if low <= v <= high]
    assert versions, f"the broker speaks Produce v{low}-{high}"
    if kafka.kind == "kafka":  # Apache Kafka 4.4: every version this client frames
        assert versions == list(range(3, ProduceRequest.MAX_VERSION + 1))
    names = [make_topic(kafka, PARTITIONS) for _ in range(2)]
    ids = {}
    for name in names:
        [t] = metadata(kafka, name).topics
        ids[name] = t.topic_id
    host, port = kafka.bootstrap.split(",")[0].rsplit(":", 1)
    sent: dict[tuple[str, int], list] = {(t, p): [] for t in names for p in range(PARTITIONS)}
    with RawConnection(host, int(port)) as conn:
        for version in versions:
            layout = wire.request_layout(version)
            pending = {}
            for n, name in enumerate(names):
                for p in range(PARTITIONS):
                    records = [(b"k%d-%d-%d" % (version, n, p), b"v" * (p * 700 + i))
                               for i in range(1 + p + n)]
                    pending[(name, p)] = records
            deadline = time.monotonic() + 10
            while pending:
                # A new topic's partitions may not have their leader yet (NOT_LEADER_OR_FOLLOWER):
                # those go again, briefly.
                request: dict[str, list] = {}
                for (name, p), records in pending.items():
                    request.setdefault(name, []).append(
                        (p, batch_of(records, 1_700_000_000_000 + version)))
                topics = ([(ids[t].bytes, parts) for t, parts in request.items()]
                          if layout["topic_ids"] else list(request.items()))
                body = _send(conn, impl, version, topics)
                decoded = ProduceResponse.decode(body, version)
                cols = impl.parse_produce_response(body, **wire.response_layout(version))
                by_id = {t.bytes: name for name, t in ids.items()}
                codes = {}
                for t in decoded.responses:
                    name = by_id[t.topic_id.bytes] if layout["topic_ids"] else t.name
                    for part in t.partition_responses:
                        codes[(name, part.index)] = (part.error_code, part.base_offset)
                assert set(codes) == set(pending)
                if any(code for code, _ in codes.values()):
                    assert cols is None  # the generated decoder carries the error codes
                    assert {c for c, _ in codes.values()} <= {0, NOT_LEADER_OR_FOLLOWER}
                    assert time.monotonic() < deadline, codes
                    time.sleep(0.05)
                else:
                    assert cols is not None, f"v{version}: {decoded}"
                    assert _as_rows(cols) == _columns_of(decoded, version)
                    names_seen = ([by_id[i] for i in cols[0]] if layout["topic_ids"]
                                  else cols[0])
                    rows = {(names_seen[t], p): base
                            for t, p, base in zip(cols[1], cols[2], cols[4], strict=True)}
                    assert set(rows) == set(pending)
                for key, (code, base) in codes.items():
                    if code == 0:
                        # each batch starts after the records written before it
                        assert base == sum(len(r) for r in sent[key]), (version, key)
                        sent[key].append(pending.pop(key))
        # a partition the topic lacks: an error code, which only the generated decoder carries
        bad = [(names[0], [(PARTITIONS + 4, batch_of([(b"k", b"v")], 1_700_000_000_000))])]
        version = max(v for v in versions if not wire.request_layout(v)["topic_ids"])
        body = _send(conn, impl, version, bad)
        assert impl.parse_produce_response(body, **wire.response_layout(version)) is None
        decoded = wire.decode_produce_response(body, version)
        [[p]] = [t.partition_responses for t in decoded.responses]
        assert (p.index, p.error_code) == (PARTITIONS + 4, UNKNOWN_TOPIC_OR_PARTITION)
        # every record reads back at the offset its response gave
        for (name, p), batches in sent.items():
            expected = [(o, k, v) for o, (k, v) in enumerate(r for b in batches for r in b)]
            fetched: list = []
            for _ in range(20):
                got = _fetch_partition(conn, 12, name, ids[name], p, len(fetched))
                fetched += [(o, k, v) for o, _, k, v in read_records(got.records)]
                if len(fetched) >= len(expected):
                    break
            assert fetched == expected, (name, p)
