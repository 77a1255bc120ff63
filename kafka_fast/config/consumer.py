"""Keys that only consumers use (defaults follow librdkafka unless noted): a Consumer's (role
``consumer``), a ShareConsumer's (role ``share``) or both. A key of one given to the other
warns and is ignored (``table.Config``)."""

from __future__ import annotations

from .table import Key

_C = ("consumer",)
_S = ("share",)
_CS = ("consumer", "share")

#: Values accepted by ``auto.offset.reset`` and the reset each one means.
OFFSET_RESET = {
    "smallest": "earliest", "earliest": "earliest", "beginning": "earliest",
    "largest": "latest", "latest": "latest", "end": "latest",
    "error": "error",
}
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")

KEYS = [
    Key("group.id", "str", "",
        "Consumer group name; required: without it Consumer() raises ValueError, as in "
        "confluent-kafka.",
        roles=_CS),
    Key("group.instance.id", "str", "",
        "Static membership id (KIP-345): a restart within session.timeout.ms keeps the "
        "assignment without a rebalance.", roles=_C),
    Key("group.protocol", "enum", "classic",
        "Group protocol: classic (JoinGroup/SyncGroup) or consumer (KIP-848 "
        "ConsumerGroupHeartbeat).", choices=("classic", "consumer"), roles=_C),
    Key("share.acknowledgement.mode", "enum", "implicit",
        "Implicit accepts the records of a poll on the next poll, commit or close; explicit "
        "requires acknowledge() for each record before the next poll.",
        choices=("implicit", "explicit"), roles=_S),
    Key("max.poll.records", "int", 500,
        "The most records one ShareFetch acquires per broker (its MaxRecords and BatchSize; "
        "the broker may exceed it to end at a record batch's boundary).", minimum=1,
        maximum=2147483647, roles=_S),
    Key("group.remote.assignor", "str", "",
        "Server-side assignor for group.protocol=consumer (empty: the broker's default).",
        roles=_C),
    Key("group.protocol.type", "str", "consumer",
        "Protocol type sent in JoinGroup.", roles=_C, java=False),
    Key("partition.assignment.strategy", "list", ["range", "roundrobin"],
        "Assignors offered in JoinGroup, in order of preference: range, roundrobin, "
        "cooperative-sticky (cooperative cannot be mixed with the eager ones).",
        roles=_C, extra={"choices": ASSIGNORS}),
    Key("session.timeout.ms", "int", 45000,
        "The coordinator evicts a member that sends no heartbeat for this long.",
        minimum=1, maximum=3600000, roles=_C),
    Key("heartbeat.interval.ms", "int", 3000, "Interval between group heartbeats.",
        minimum=1, maximum=3600000, roles=_CS),
    Key("coordinator.query.interval.ms", "int", 600000,
        "Accepted for compatibility, no effect: the coordinator is looked up again when it "
        "answers NOT_COORDINATOR or its connection fails.", minimum=1, maximum=3600000, roles=_C,
        java=False, ignored=True),
    Key("max.poll.interval.ms", "int", 300000,
        "Leave the group when the application does not call poll/consume for this long.",
        minimum=1, maximum=86400000, roles=_C),
    Key("enable.auto.commit", "bool", True,
        "Commit stored offsets every auto.commit.interval.ms from the poll path.", roles=_C,
        aliases=("auto.commit.enable",)),
    Key("auto.commit.interval.ms", "int", 5000, "Auto commit interval.", minimum=0,
        maximum=86400000, roles=_C),
    Key("enable.auto.offset.store", "bool", True,
        "Store the offset of each message handed to the application for the next commit "
        "(else only store_offsets() stores).", roles=_C, java=False),
    Key("auto.offset.reset", "enum", "largest",
        "Where to start when there is no committed offset or it is out of range: "
        "smallest/earliest/beginning, largest/latest/end, or error.",
        choices=tuple(OFFSET_RESET), roles=_C),
    Key("isolation.level", "enum", "read_committed",
        "read_committed hides aborted transactional records; read_uncommitted returns all.",
        choices=("read_committed", "read_uncommitted"), roles=_C),
    Key("fetch.min.bytes", "int", 1, "Minimum bytes a broker gathers before answering a Fetch.",
        minimum=1, maximum=100000000, roles=_CS),
    Key("fetch.wait.max.ms", "int", 500,
        "Longest time a broker waits for fetch.min.bytes.", minimum=0, maximum=300000,
        aliases=("fetch.max.wait.ms",), roles=_CS),
    Key("fetch.max.bytes", "int", 52428800, "Maximum bytes of one Fetch response.",
        minimum=0, maximum=2147483135, roles=_CS),
    Key("max.partition.fetch.bytes", "int", 1048576,
        "Maximum bytes per partition in one Fetch response.", minimum=1,
        maximum=1000000000, aliases=("fetch.message.max.bytes",), roles=_C),
    Key("queued.max.messages.kbytes", "int", 65536,
        "Prefetch budget: stop fetching while this many kilobytes wait for the application.",
        minimum=1, maximum=2097151, roles=_C, java=False),
    Key("queued.min.messages", "int", 100000,
        "Keep fetching while fewer records than this wait for the application.",
        minimum=1, maximum=10000000, roles=_C, java=False),
    Key("fetch.error.backoff.ms", "int", 500,
        "Back off this long before fetching a partition again after an error.", minimum=0,
        maximum=300000, roles=_C, java=False),
    Key("fetch.queue.backoff.ms", "int", 1000,
        "Accepted for compatibility, no effect: fetching resumes as soon as the application "
        "takes records and the prefetch budget has room.", minimum=0, maximum=300000,
        roles=_C, java=False, ignored=True),
    Key("check.crcs", "bool", False, "Verify the CRC32C of every fetched batch.", roles=_CS),
    Key("enable.partition.eof", "bool", False,
        "Deliver a _PARTITION_EOF event each time a partition reaches its end.", roles=_C,
        java=False),
    Key("allow.auto.create.topics", "bool", False,
        "Let a subscription create missing topics through Metadata.", roles=_C),
    Key("on_commit", "callable", None,
        "Called from poll with (KafkaError or None, [TopicPartition]) after each commit.",
        roles=_C, java=False, aliases=("offset_commit_cb",)),
    Key("fetch.sessions", "bool", True,
        "Use incremental fetch sessions (KIP-227) where the broker supports them.",
        roles=_C, librdkafka=False, java=False),
    Key("consume.messages.per.chunk", "int", 512,
        "How many Message objects poll() builds at a time from fetched columns.",
        minimum=1, maximum=1000000, roles=_C, librdkafka=False, java=False),
]

