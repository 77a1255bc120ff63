"""``kafka-fast groups``: consumer groups with each partition's committed offset, log end
and lag."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from .connect import connect, connect_config
from .logend import log_end_offsets
from .options import add_common, client_config

if TYPE_CHECKING:
    from ..admin import AdminClient


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``groups`` subcommand."""
    p = sub.add_parser(
        "groups", help="consumer groups: committed offset, end and lag per partition",
        description="List consumer groups (ListGroups on every broker, or the groups named "
                    "with -g) with each partition's committed offset, log end offset and lag.")
    add_common(p)
    p.add_argument("-g", "--group", dest="groups", action="append", default=[],
                   metavar="GROUP", help="only this group (repeatable; needed on brokers "
                                         "without ListGroups)")
    p.add_argument("-t", "--topic", help="only partitions of this topic (asks for just "
                                          "these offsets; needed on the mock cluster)")
    p.add_argument("--timeout", type=float, default=30.0)
    p.set_defaults(run=run)


def _group_names(admin: AdminClient, args: argparse.Namespace
                 ) -> tuple[list[str], dict[str, str | None]]:
    """The groups to show and their states (asked of every broker unless -g names them)."""
    if args.groups:
        return list(dict.fromkeys(args.groups)), {}
    listed = admin.list_consumer_groups(request_timeout=args.timeout).result(args.timeout + 1)
    for err in listed.errors:
        print(f"kafka-fast groups: could not list the groups of {err.str()} ({err.name()})",
              file=sys.stderr)
    if listed.errors and not listed.valid:
        raise GroupsError("no broker listed its groups; name groups with -g")
    states = {g.group_id: None if g.state.name == "UNKNOWN" else g.state.name
              for g in listed.valid}
    return sorted(states), states


class GroupsError(Exception):
    """Nothing to show; reported in one line."""


def run(args: argparse.Namespace) -> int:
    """Print each group's partitions with committed offset, end offset and lag."""
    from .. import Consumer, TopicPartition
    from ..admin import AdminClient, ConsumerGroupTopicPartitions

    conf = client_config(args)
    connect_config(conf, args.timeout)
    admin = AdminClient(conf)
    consumer = None
    try:
        meta = connect(admin, args, conf, args.topic)
        wanted = None
        if args.topic is not None:  # ask for the topic's partitions only
            topic = meta.topics.get(args.topic)
            if topic is None or not topic.partitions:
                print(f"kafka-fast groups: topic {args.topic!r} does not exist",
                      file=sys.stderr)
                return 1
            wanted = [TopicPartition(args.topic, p) for p in sorted(topic.partitions)]
        try:
            names, states = _group_names(admin, args)
        except GroupsError as exc:
            print(f"kafka-fast groups: {exc}", file=sys.stderr)
            return 1
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g, wanted) for g in names],
            request_timeout=args.timeout)
        committed = {gid: fut.result(args.timeout + 1).topic_partitions
                     for gid, fut in futures.items()}
        by_topic: dict[str, set[int]] = {}
        for tps in committed.values():
            for tp in tps:
                if args.topic is None or tp.topic == args.topic:
                    by_topic.setdefault(tp.topic, set()).add(tp.partition)
        consumer = Consumer({**conf, "group.id": f"kafka-fast-cli-{os.getpid()}",
                             "enable.auto.commit": False})
        ends = {topic: log_end_offsets(conf, consumer, topic, sorted(parts), args.timeout)
                for topic, parts in by_topic.items()}
        rows = []
        for group in names:
            parts = []
            for tp in committed[group]:
                if args.topic is not None and tp.topic != args.topic or (
                        wanted is not None and tp.offset < 0):
                    continue
                end = ends[tp.topic][tp.partition]
                has = tp.offset >= 0
                parts.append({"topic": tp.topic, "partition": tp.partition,
                              "committed": tp.offset if has else None, "end": end,
                              "lag": max(0, end - tp.offset) if has else None})
            rows.append({"group": group, "state": states.get(group), "partitions": parts})
    finally:
        if consumer is not None:
            consumer.close()
        admin.close()
    _print(rows, args.json)
    return 0


def _print(rows: list[dict], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows))
        return
    for row in rows:
        state = f" ({row['state'].lower()})" if row["state"] else ""
        total = sum(p["lag"] or 0 for p in row["partitions"])
        print(f"group {row['group']}{state}: {len(row['partitions'])} partitions, lag {total}")
        for p in row["partitions"]:
            committed = "-" if p["committed"] is None else p["committed"]
            lag = "-" if p["lag"] is None else p["lag"]
            print(f"  {p['topic']} [{p['partition']}]  committed {committed}  end {p['end']}  "
                  f"lag {lag}")
