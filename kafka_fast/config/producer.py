"""Keys that only a producer uses.

Defaults follow librdkafka except where noted in the key's doc: idempotence is on (as in the
Java client) and the default partitioner is ``murmur2_random`` (keys land where the Java
client and Spark's Kafka sink put them).
"""

from __future__ import annotations

from .table import Key

_P = ("producer",)

#: Partitioners by name (librdkafka's names).
PARTITIONERS = (
    "random", "consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a",
    "fnv1a_random",
)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: ``acks`` values and the RequiredAcks each one sends.
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}

KEYS = [
    Key("acks", "enum", "all",
        "Acknowledgements the leader waits for: 0 (none), 1 (leader only), all/-1 (all "
        "in-sync replicas).", choices=tuple(ACKS), aliases=("request.required.acks",),
        roles=_P),
    Key("linger.ms", "float", 5.0,
        "How long a batch may wait for more records before it is sent.", minimum=0,
        maximum=900000, aliases=("queue.buffering.max.ms",), roles=_P),
    Key("python.switch.interval.ms", "float", 0.0,
        "Opt-in, process-wide: while the producer is open, CPython's thread switch interval "
        "is at most this (sys.setswitchinterval; the interpreter's default is 5 ms); the "
        "previous interval is restored when the last producer asking for one closes. 0 (the "
        "default) leaves the interpreter's setting alone: the I/O thread keeps the "
        "interpreter lock through its socket calls and does not need it.", minimum=0,
        maximum=1000, roles=_P, librdkafka=False, java=False),
    Key("produce.connections.per.broker", "int", 1,
        "Connections a producer sends Produce requests to one broker on (1-4). A broker "
        "writes one connection's requests one at a time; with k connections partition p "
        "always goes over connection p % k (each partition's order is kept) and the broker "
        "writes up to k requests at once.", minimum=1, maximum=4, roles=_P, librdkafka=False,
        java=False),
    Key("batch.size", "int", 1000000,
        "Maximum bytes of one record batch (the Java client's default is 16384).", minimum=1,
        maximum=2147483647, roles=_P),
    Key("batch.num.messages", "int", 10000, "Maximum records in one record batch.",
        minimum=1, maximum=1000000, roles=_P, java=False),
    Key("compression.type", "enum", "none", "Compression codec of produced batches.",
        choices=CODECS, aliases=("compression.codec",), roles=_P),
    Key("compression.level", "int", -1,
        "Codec level (-1: the codec's default; gzip 0-9, lz4 0-12, zstd 1-22).", minimum=-1,
        maximum=22, roles=_P, java=False),
    Key("queue.buffering.max.messages", "int", 100000,
        "Records the producer holds (queued, in flight or awaiting their delivery report) "
        "before produce() raises BufferError.", minimum=0, maximum=2147483647, roles=_P,
        java=False),
    Key("queue.buffering.max.kbytes", "int", 1048576,
        "Kilobytes of record data the producer holds before produce() raises BufferError.",
        minimum=1, maximum=2147483647, roles=_P, java=False),
    Key("message.max.bytes", "int", 1000000,
        "Largest record (key + value + headers + record overhead) accepted by produce(); "
        "larger ones fail with MSG_SIZE_TOO_LARGE.", minimum=1000, maximum=1000000000,
        roles=_P, java=False),
    Key("delivery.timeout.ms", "int", 300000,
        "Time limit for a record from produce() to its acknowledgement, retries included; "
        "then it fails with _MSG_TIMED_OUT (0 = no limit).", minimum=0, maximum=2147483647,
        aliases=("message.timeout.ms",), roles=_P),
    Key("retries", "int", 2147483647,
        "How many times a failed batch is retried (within delivery.timeout.ms).", minimum=0,
        maximum=2147483647, aliases=("message.send.max.retries",), roles=_P),
    Key("enable.idempotence", "bool", True,
        "Producer id, epoch and per-partition sequences so retries neither duplicate nor "
        "reorder records (librdkafka's default is false, the Java client's true).", roles=_P),
    Key("enable.gapless.guarantee", "bool", False,
        "Accepted for compatibility; an idempotent producer here always keeps order.",
        roles=_P, java=False, ignored=True),
    Key("partitioner", "enum", "murmur2_random",
        "How a record's partition is chosen when produce() is not given one "
        "(librdkafka's default is consistent_random).", choices=PARTITIONERS, roles=_P,
        java=False, exact_case=True),
    Key("sticky.partitioning.linger.ms", "int", 10,
        "Records without a key stick to one partition until its batch is sealed or this "
        "many milliseconds have passed (0: only when its batch is sealed).", minimum=0,
        maximum=900000, roles=_P, java=False),
    Key("transactional.id", "str", "",
        "Transactional id; enables the transactional producer.", roles=_P),
    Key("transaction.timeout.ms", "int", 60000,
        "Time the transaction coordinator waits before aborting an open transaction.",
        minimum=1000, maximum=2147483647, roles=_P),
    Key("on_delivery", "callable", None,
        "Delivery report callback cb(err, msg) for every record, called from poll()/flush().",
        aliases=("dr_cb", "dr_msg_cb"), roles=_P, java=False),
    Key("delivery.report.only.error", "bool", False,
        "Only report failed deliveries to the delivery callback.", roles=_P, java=False),
    Key("produce.offset.report", "bool", False,
        "Accepted for compatibility (offsets are always reported).", roles=_P, java=False,
        ignored=True),
]
