"""kcat's ``-L`` (metadata list) and ``-Q`` (offsets for times), printed as kcat prints them:
text, or with ``-J`` kcat's JSON (one object, no newline after it)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError
from .connect import connect, connect_config
from .kcatfmt import json_bytes
from .options import INT32_MAX, INT64_MAX, UsageError, client_config

if TYPE_CHECKING:
    from ..admin import ClusterMetadata
    from ..topic_partition import TopicPartition

#: librdkafka's text for the errors a metadata or offsets answer carries (kcat prints it).
_RDKAFKA_TEXT = {
    KafkaError.UNKNOWN_TOPIC_OR_PART: "Broker: Unknown topic or partition",
    KafkaError.LEADER_NOT_AVAILABLE: "Broker: Leader not available",
    KafkaError.REPLICA_NOT_AVAILABLE: "Broker: Replica not available",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "Broker: Topic authorization failed",
    KafkaError.INVALID_TOPIC_EXCEPTION: "Broker: Invalid topic",
    KafkaError.NOT_LEADER_FOR_PARTITION: "Broker: Not leader for partition",
    KafkaError._UNKNOWN_PARTITION: "Local: Unknown partition",
}


def namespace(mode: str, topics: list[str], envelope: bool) -> argparse.Namespace:
    """The options of ``-L`` (``topics``: at most the last -t) or ``-Q`` (each -t is
    ``topic:partition:timestamp``); the caller adds the common ones."""
    if mode == "L":
        return argparse.Namespace(command="metadata", run=run_list, envelope=envelope,
                                  topic=topics[-1] if topics else None)
    if not topics:
        raise UsageError("-Q requires one or more -t <topic>:<partition>:<timestamp>")
    return argparse.Namespace(command="query", run=run_query, envelope=envelope,
                              queries=[parse_query(t) for t in topics])


def parse_query(text: str) -> tuple[str, int, int]:
    """``topic:partition:timestamp`` (numbers as C reads them: ``0x`` hex, ``0`` octal)."""
    topic, _, rest = text.partition(":")
    part, sep, stamp = rest.partition(":")
    partition, timestamp = _c_integer(part), _c_integer(stamp)
    if not topic or not sep or partition is None or timestamp is None \
            or not 0 <= partition <= INT32_MAX or not -INT64_MAX <= timestamp <= INT64_MAX:
        raise UsageError(f'-t: expected "topic:partition:offset_or_timestamp", got {text!r}')
    return topic, partition, timestamp


def _c_integer(text: str) -> int | None:
    """An integer as C's strtoll with base 0 reads a whole string (``0x`` hex, a leading
    ``0`` octal, else decimal), or None."""
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-") if body[:1] in "+-" else body
    try:
        if body[:2].lower() == "0x":
            return sign * int(body[2:], 16)
        if body.startswith("0") and len(body) > 1:
            return sign * int(body[1:], 8)
        return sign * int(body, 10)
    except ValueError:
        return None


def error_text(err: KafkaError) -> str:
    """An error as librdkafka words it, as kcat prints it."""
    return _RDKAFKA_TEXT.get(err.code(), err.str())


def render_list(md: ClusterMetadata, topic: str | None) -> bytes:
    """kcat's ``-L`` text."""
    lines = [f"Metadata for {topic or 'all topics'} (from broker {md.orig_broker_id}: "
             f"{md.orig_broker_name}):", f" {len(md.brokers)} brokers:"]
    for b in md.brokers.values():
        mark = " (controller)" if b.id == md.controller_id else ""
        lines.append(f"  broker {b.id} at {b.host}:{b.port}{mark}")
    lines.append(f" {len(md.topics)} topics:")
    for t in md.topics.values():
        line = f'  topic "{t.topic}" with {len(t.partitions)} partitions:'
        if t.error is not None:
            line += " " + error_text(t.error)
            if t.error.code() == KafkaError.LEADER_NOT_AVAILABLE:
                line += " (try again)"
        lines.append(line)
        for p in sorted(t.partitions.values(), key=lambda p: p.id):
            line = (f"    partition {p.id}, leader {p.leader}, replicas: "
                    f"{','.join(map(str, p.replicas))}, isrs: {','.join(map(str, p.isrs))}")
            if p.error is not None:
                line += ", " + error_text(p.error)
            lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def _js(text: str | None) -> bytes:
    return json_bytes(None if text is None else text.encode())


def render_list_json(md: ClusterMetadata, topic: str | None) -> bytes:
    """kcat's ``-L -J`` JSON (its field order; no newline after it)."""
    brokers = b",".join(b'{"id":%d,"name":%s}' % (b.id, _js(f"{b.host}:{b.port}"))
                        for b in md.brokers.values())
    topics = []
    for t in md.topics.values():
        parts = []
        for p in sorted(t.partitions.values(), key=lambda p: p.id):
            error = b',"error":' + _js(error_text(p.error)) if p.error is not None else b""
            parts.append(b'{"partition":%d%s,"leader":%d,"replicas":[%s],"isrs":[%s]}' % (
                p.id, error, p.leader, b",".join(b'{"id":%d}' % r for r in p.replicas),
                b",".join(b'{"id":%d}' % r for r in p.isrs)))
        error = b',"error":' + _js(error_text(t.error)) if t.error is not None else b""
        topics.append(b'{"topic":%s%s,"partitions":[%s]}' % (_js(t.topic), error,
                                                            b",".join(parts)))
    return (b'{"originating_broker":{"id":%d,"name":%s},"query":{"topic":%s},'
            b'"controllerid":%d,"brokers":[%s],"topics":[%s]}' % (
                md.orig_broker_id, _js(md.orig_broker_name), _js(topic or "*"),
                md.controller_id, brokers, b",".join(topics)))


def render_offsets(found: list[TopicPartition], envelope: bool) -> bytes:
    """kcat's ``-Q`` answer, sorted by topic and partition: ``topic [p] offset N`` lines, or
    with ``-J`` one JSON object keyed by topic, then by partition."""
    rows = sorted(found, key=lambda tp: (tp.topic.encode(), tp.partition))
    if not envelope:
        return b"".join(
            f"{tp.topic} [{tp.partition}] offset {tp.offset}".encode()
            + (b": " + error_text(tp.error).encode() if tp.error is not None else b"") + b"\n"
            for tp in rows)
    out = bytearray(b"{")
    last: str | None = None
    for tp in rows:
        if tp.topic != last:
            if last is not None:
                out += b"},"
            out += _js(tp.topic) + b':{"topic":' + _js(tp.topic)
            last = tp.topic
        error = b',"error":' + _js(error_text(tp.error)) if tp.error is not None else b""
        out += b',"%d":{"partition":%d,"offset":%d%s}' % (tp.partition, tp.partition,
                                                          tp.offset, error)
    if last is not None:
        out += b"}"
    return bytes(out + b"}")


def run_list(args: argparse.Namespace) -> int:
    """Print the cluster's brokers and topics (or one topic) as kcat -L does."""
    from ..admin import AdminClient

    conf = client_config(args)
    connect_config(conf, args.timeout)
    admin = AdminClient(conf)
    try:
        md = connect(admin, args, conf, args.topic)
    finally:
        admin.close()
    render = render_list_json if args.envelope else render_list
    sys.stdout.buffer.write(render(md, args.topic))
    sys.stdout.flush()
    return 0


def run_query(args: argparse.Namespace) -> int:
    """Print the offset of the first record at or after each timestamp, as kcat -Q does."""
    from .. import Consumer, TopicPartition

    conf = client_config(args)
    connect_config(conf, args.timeout)
    conf.setdefault("group.id", "kafka-fast-cli-query")
    conf["enable.auto.commit"] = False
    consumer = Consumer(conf)
    try:
        connect(consumer, args, conf)
        found: list[Any] = consumer.offsets_for_times(
            [TopicPartition(t, p, ts) for t, p, ts in args.queries], timeout=args.timeout)
    finally:
        consumer.close()
    sys.stdout.buffer.write(render_offsets(found, args.envelope))
    sys.stdout.flush()
    return 0
