"""librdkafka properties that have no counterpart here: the ones accepted for compatibility
with a warning that they change nothing, and the ones refused, each with its reason (the
error says it). docs/librdkafka-keys.md accounts for every librdkafka property."""

from __future__ import annotations

from .table import Key

_C = ("consumer", "share")  # both consumers
_P = ("producer",)

#: Accepted with a warning: they tune librdkafka's own internals, which do not exist here.
KEYS = [
    Key(name, "any", default, f"librdkafka's {what}; nothing here corresponds to it.",
        roles=roles, java=False, ignored=True)
    for name, default, what, roles in (
        ("builtin.features", "", "check of its build features", _P + _C + ("admin",)),
        ("message.copy.max.bytes", 65535, "copy-or-reference threshold for record data", _P + _C),
        ("topic.metadata.refresh.fast.interval.ms", 100, "fast metadata retry interval",
         _P + _C + ("admin",)),
        ("topic.metadata.refresh.fast.cnt", 10, "fast metadata retry count (deprecated)",
         _P + _C + ("admin",)),
        ("topic.metadata.refresh.sparse", True, "sparse metadata requests switch",
         _P + _C + ("admin",)),
        ("topic.metadata.propagation.max.ms", 30000, "wait for a created topic to propagate",
         _P + _C + ("admin",)),
        ("socket.blocking.max.ms", 1000, "socket blocking time (deprecated)",
         _P + _C + ("admin",)),
        ("socket.max.fails", 1, "send failures before a disconnect", _P + _C + ("admin",)),
        ("broker.address.ttl", 1000, "cache time of resolved broker addresses",
         _P + _C + ("admin",)),
        ("reconnect.backoff.jitter.ms", 0, "reconnect jitter (deprecated)",
         _P + _C + ("admin",)),
        ("enabled_events", 0, "rd_kafka_conf_set_events() mask", _P + _C + ("admin",)),
        ("log.queue", False, "log forwarding to a queue", _P + _C + ("admin",)),
        ("log.thread.name", True, "thread name in log lines", _P + _C + ("admin",)),
        ("enable.random.seed", True, "srand() call at start", _P + _C + ("admin",)),
        ("log.connection.close", True, "logging of idle connection closes",
         _P + _C + ("admin",)),
        ("internal.termination.signal", 0, "signal for fast thread termination",
         _P + _C + ("admin",)),
        ("api.version.request.timeout.ms", 10000, "ApiVersions timeout",
         _P + _C + ("admin",)),
        ("api.version.fallback.ms", 0, "fallback time after a failed ApiVersions (deprecated)",
         _P + _C + ("admin",)),
        ("broker.version.fallback", "0.10.0", "broker version to assume without ApiVersions",
         _P + _C + ("admin",)),
        ("enable.metrics.push", True, "client metrics push (KIP-714)", _P + _C + ("admin",)),
        ("queue.buffering.backpressure.threshold", 1, "batching backpressure threshold", _P),
        ("queuing.strategy", "fifo", "producer queueing order (deprecated, experimental)", _P),
        ("consume.callback.max.messages", 0, "batch limit of rd_kafka_consume_callback()", _C),
    )
]

_CALLBACK = "a C API callback (set with rd_kafka_conf_set_*())"
_OFFSET_FILE = ("offsets are committed to the group coordinator; librdkafka's local offset "
                "file store is not supported")

#: Refused, with the reason.
REFUSED: dict[str, str] = {
    "topic.blacklist": "hiding topics from metadata by pattern is not supported",
    "log_cb": f"{_CALLBACK}: pass a logging.Logger as logger",
    "background_event_cb": f"{_CALLBACK}: use error_cb, stats_cb, throttle_cb",
    "socket_cb": f"{_CALLBACK}: kafka_fast opens its own sockets",
    "connect_cb": f"{_CALLBACK}: kafka_fast opens its own sockets",
    "closesocket_cb": f"{_CALLBACK}: kafka_fast opens its own sockets",
    "open_cb": f"{_CALLBACK}: kafka_fast opens its own files",
    "resolve_cb": f"{_CALLBACK}: names are resolved with getaddrinfo()",
    "opaque": "a C API pointer: Python callbacks carry their own state",
    "default_topic_conf": "a C API object: give topic properties in the same dict",
    "ssl_key": f"{_CALLBACK}: use ssl.key.location or ssl.key.pem",
    "ssl_certificate": f"{_CALLBACK}: use ssl.certificate.location or ssl.certificate.pem",
    "ssl_ca": f"{_CALLBACK}: use ssl.ca.location or ssl.ca.pem",
    "ssl_engine_callback_data": "a C API pointer for OpenSSL engines (set with "
                                "rd_kafka_conf_set_engine_callback_data()); the engine is "
                                "called without callback data",
    "ssl.certificate.verify_cb": f"{_CALLBACK}: brokers are verified by Python's ssl module "
                                 "(enable.ssl.certificate.verification)",
    "ssl.ca.certificate.stores": "Windows certificate stores only; refused on this platform by "
                                 "librdkafka too: use ssl.ca.location",
    "oauthbearer_token_refresh_cb": f"{_CALLBACK}: pass oauth_cb",
    "plugin.library.paths": "librdkafka plugins are C libraries",
    "interceptors": "librdkafka interceptors are C plugins",
    "offset.store.method": _OFFSET_FILE,
    "offset.store.path": _OFFSET_FILE,
    "offset.store.sync.interval.ms": _OFFSET_FILE,
    "consume_cb": f"{_CALLBACK}: consume with poll() or consume()",
    "rebalance_cb": f"{_CALLBACK}: pass on_assign, on_revoke and on_lost to subscribe()",
    "partitioner_cb": f"{_CALLBACK}: set partitioner, or pass partition to produce()",
    "msg_order_cmp": f"{_CALLBACK} for the lifo queuing strategy, which is not supported",
}

#: The refused names confluent-kafka refuses too, whatever the value: librdkafka's C API
#: pointers and callbacks ("must be set through dedicated .._set_..() function", "Internal
#: property ... not settable") and Windows' certificate stores ("configuration only valid on
#: Windows"). tests/test_librdkafka_keys.py gives each to confluent-kafka as well.
REFUSED_BY_CONFLUENT_TOO = frozenset({
    "log_cb", "background_event_cb", "socket_cb", "connect_cb", "closesocket_cb", "open_cb",
    "resolve_cb", "opaque", "default_topic_conf", "ssl_key", "ssl_certificate", "ssl_ca",
    "ssl_engine_callback_data", "ssl.certificate.verify_cb", "ssl.ca.certificate.stores",
    "oauthbearer_token_refresh_cb", "interceptors", "consume_cb", "rebalance_cb",
    "partitioner_cb", "msg_order_cmp",
})
