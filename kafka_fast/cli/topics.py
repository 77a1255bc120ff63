"""``kafka-fast topics list|create|delete|describe`` and ``kafka-fast metadata``."""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from ..errors import KafkaException
from .connect import connect, connect_config
from .options import INT32_MAX, UsageError, add_common, client_config, in_range

if TYPE_CHECKING:
    from ..admin import AdminClient, ClusterMetadata


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``topics`` and ``metadata`` subcommands."""
    topics = sub.add_parser("topics", help="list, create, delete or describe topics")
    actions = topics.add_subparsers(dest="action", required=True)
    lst = actions.add_parser("list", help="topic names")
    add_common(lst)
    create = actions.add_parser("create", help="create a topic")
    add_common(create)
    create.add_argument("topic")
    create.add_argument("-P", "--partitions", type=int, default=1)
    create.add_argument("-R", "--replication-factor", type=int, default=1)
    create.add_argument("-C", "--config", action="append", default=[], metavar="KEY=VALUE",
                        help="topic configuration (repeatable)")
    delete = actions.add_parser("delete", help="delete topics")
    add_common(delete)
    delete.add_argument("topic", nargs="+")
    describe = actions.add_parser("describe", help="partitions, leaders and replicas")
    add_common(describe)
    describe.add_argument("topic", nargs="*")
    for p in (lst, create, delete, describe):
        p.add_argument("--timeout", type=float, default=30.0)
        p.set_defaults(run=run_topics)
    meta = sub.add_parser("metadata", help="brokers, topics and partition leaders")
    add_common(meta)
    meta.add_argument("--timeout", type=float, default=30.0)
    meta.set_defaults(run=run_metadata)


def _admin(args: argparse.Namespace) -> tuple[AdminClient, ClusterMetadata]:
    """An AdminClient and the cluster's metadata (all topics), once the cluster answers."""
    from ..admin import AdminClient

    conf = client_config(args)
    connect_config(conf, args.timeout)
    admin = AdminClient(conf)
    try:
        return admin, connect(admin, args, conf)
    except BaseException:
        admin.close()
        raise


def _wait(futures: dict, timeout: float) -> list[str]:
    """Wait for every admin future; return the names that succeeded (errors raise)."""
    done = []
    for name, fut in futures.items():
        fut.result(timeout=timeout)
        done.append(name)
    return done


def _delete(admin: AdminClient, args: argparse.Namespace) -> int:
    """Delete each topic; report every one (deleted, or why not); 1 if any failed."""
    futures = admin.delete_topics(args.topic, request_timeout=args.timeout)
    deleted: list[str] = []
    failed: dict[str, str] = {}
    for name, fut in futures.items():
        try:
            fut.result(timeout=args.timeout)
            deleted.append(name)
        except KafkaException as exc:
            err = exc.args[0]
            failed[name] = f"{err.name()}: {err.str()}"
        except FutureTimeout:
            failed[name] = f"no answer within {args.timeout:g}s"
    if args.json:
        print(json.dumps({"deleted": deleted, "failed": failed}))
    else:
        for name in deleted:
            print(f"deleted {name}")
        for name, why in failed.items():
            print(f"kafka-fast topics delete: {name}: not deleted: {why}", file=sys.stderr)
    return 1 if failed else 0


def run_topics(args: argparse.Namespace) -> int:
    """Run one ``topics`` action."""
    from ..admin import NewTopic

    if args.action == "create":
        for value, option, high in ((args.partitions, "-P", INT32_MAX),
                                    (args.replication_factor, "-R", (1 << 15) - 1)):
            if value != -1:  # -1: the broker's default
                in_range(value, option, 1, high)
    admin, md = _admin(args)
    try:
        if args.action == "list":
            names = sorted(t for t in md.topics if not t.startswith("__"))
            print(json.dumps(names) if args.json else "\n".join(names))
        elif args.action == "create":
            configs = {}
            for item in args.config:
                key, sep, value = item.partition("=")
                if not sep:
                    raise UsageError(f"-C expects KEY=VALUE, got {item!r}")
                configs[key] = value
            topic = NewTopic(args.topic, num_partitions=args.partitions,
                             replication_factor=args.replication_factor, config=configs)
            _wait(admin.create_topics([topic], request_timeout=args.timeout), args.timeout)
            _say(args, {"created": args.topic}, f"created {args.topic}")
        elif args.action == "delete":
            return _delete(admin, args)
        else:
            wanted = args.topic or sorted(t for t in md.topics if not t.startswith("__"))
            rows = [_describe(md, name) for name in wanted]
            if args.json:
                print(json.dumps(rows))
            else:
                for row in rows:
                    print(f"topic {row['topic']}: {len(row['partitions'])} partitions")
                    for p in row["partitions"]:
                        print(f"  partition {p['partition']}: leader {p['leader']}, "
                              f"replicas {p['replicas']}, isr {p['isr']}")
    finally:
        _close(admin)
    return 0


def _describe(md: Any, name: str) -> dict:
    topic = md.topics.get(name)
    if topic is None or (topic.error is not None and not topic.partitions):
        raise UsageError(f"topic {name!r} does not exist")
    return {"topic": name, "partitions": [
        {"partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
         "isr": list(p.isrs)} for p in sorted(topic.partitions.values(), key=lambda p: p.id)]}


def run_metadata(args: argparse.Namespace) -> int:
    """Print brokers and every topic's partition leaders."""
    admin, md = _admin(args)
    try:
        brokers = [{"id": b.id, "host": b.host, "port": b.port}
                   for b in sorted(md.brokers.values(), key=lambda b: b.id)]
        topics = [_describe(md, t) for t in sorted(md.topics) if not t.startswith("__")]
        if args.json:
            print(json.dumps({"cluster_id": md.cluster_id, "controller_id": md.controller_id,
                              "brokers": brokers, "topics": topics}))
        else:
            print(f"cluster {md.cluster_id}, controller {md.controller_id}")
            print(f"{len(brokers)} brokers:")
            for b in brokers:
                print(f"  broker {b['id']} at {b['host']}:{b['port']}")
            print(f"{len(topics)} topics:")
            for t in topics:
                leaders = ", ".join(f"{p['partition']}->{p['leader']}" for p in t["partitions"])
                print(f"  {t['topic']}: {leaders}")
    finally:
        _close(admin)
    return 0


def _say(args: argparse.Namespace, obj: dict, text: str) -> None:
    print(json.dumps(obj) if args.json else text)


def _close(admin: AdminClient) -> None:
    close = getattr(admin, "close", None)
    if close is not None:
        close()
