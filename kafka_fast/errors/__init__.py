"""Errors: ``KafkaError`` values and the exceptions that carry them (confluent-kafka compatible).

Broker error codes come from the generated table (``kafka_fast.errors.codes``); names follow
librdkafka's where the two differ (``UNKNOWN_TOPIC_OR_PART``, ``MSG_SIZE_TOO_LARGE``, ...), and
Kafka's names stay available as aliases. Local (client-side) errors are negative, with
librdkafka's numbers and leading-underscore names.

Where every error of the package lives:

- here: ``KafkaError``, ``KafkaException`` and the exceptions of bad input and bad bytes
  (``ConfigError``, ``ProtocolError``, ``CorruptRecordError``, ``DecompressionLimitError``...);
- ``kafka_fast.errors.codes``: the broker's codes, names and retriable flags (generated);
- ``kafka_fast.serialization.errors``: the serializing clients' errors (``ConsumeError``,
  ``KeySerializationError``...), also at confluent-kafka's path ``kafka_fast.error``;
- ``kafka_fast.share.model``: ``IllegalStateException`` and ``ConcurrentModificationException``
  of the share consumer (the Java client's names);
- inside the layers that raise them: ``net`` (``ConnectionClosed``, ``SaslError``,
  ``ScramError``, ``GssapiError``, ``OAuthError``), ``protocol.primitives.WireError`` and the
  CLI's own usage errors (``cli``).
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from .codes import BROKER_ERRORS as _GENERATED_BROKER_ERRORS

#: librdkafka's local error codes (``rd_kafka_resp_err_t`` below zero).
LOCAL_ERRORS: dict[int, tuple[str, str]] = {
    -199: ("_BAD_MSG", "Local: Bad message format"),
    -198: ("_BAD_COMPRESSION", "Local: Invalid compressed data"),
    -197: ("_DESTROY", "Local: Broker handle destroyed"),
    -196: ("_FAIL", "Local: Communication failure with broker"),
    -195: ("_TRANSPORT", "Local: Broker transport failure"),
    -194: ("_CRIT_SYS_RESOURCE", "Local: Critical system resource failure"),
    -193: ("_RESOLVE", "Local: Host resolution failure"),
    -192: ("_MSG_TIMED_OUT", "Local: Message timed out"),
    -191: ("_PARTITION_EOF", "Broker: No more messages"),
    -190: ("_UNKNOWN_PARTITION", "Local: Unknown partition"),
    -189: ("_FS", "Local: File or filesystem error"),
    -188: ("_UNKNOWN_TOPIC", "Local: Unknown topic"),
    -187: ("_ALL_BROKERS_DOWN", "Local: All broker connections are down"),
    -186: ("_INVALID_ARG", "Local: Invalid argument or configuration"),
    -185: ("_TIMED_OUT", "Local: Timed out"),
    -184: ("_QUEUE_FULL", "Local: Queue full"),
    -183: ("_ISR_INSUFF", "Local: ISR count insufficient"),
    -182: ("_NODE_UPDATE", "Local: Broker node update"),
    -181: ("_SSL", "Local: SSL error"),
    -180: ("_WAIT_COORD", "Local: Waiting for coordinator"),
    -179: ("_UNKNOWN_GROUP", "Local: Unknown group"),
    -178: ("_IN_PROGRESS", "Local: Operation in progress"),
    -177: ("_PREV_IN_PROGRESS", "Local: Previous operation in progress"),
    -176: ("_EXISTING_SUBSCRIPTION", "Local: Existing subscription"),
    -175: ("_ASSIGN_PARTITIONS", "Local: Assign partitions"),
    -174: ("_REVOKE_PARTITIONS", "Local: Revoke partitions"),
    -173: ("_CONFLICT", "Local: Conflicting use"),
    -172: ("_STATE", "Local: Erroneous state"),
    -171: ("_UNKNOWN_PROTOCOL", "Local: Unknown protocol"),
    -170: ("_NOT_IMPLEMENTED", "Local: Not implemented"),
    -169: ("_AUTHENTICATION", "Local: Authentication failure"),
    -168: ("_NO_OFFSET", "Local: No offset stored"),
    -167: ("_OUTDATED", "Local: Outdated"),
    -166: ("_TIMED_OUT_QUEUE", "Local: Timed out in queue"),
    -165: ("_UNSUPPORTED_FEATURE", "Local: Required feature not supported by broker"),
    -164: ("_WAIT_CACHE", "Local: Awaiting cache update"),
    -163: ("_INTR", "Local: Operation interrupted"),
    -162: ("_KEY_SERIALIZATION", "Local: Key serialization error"),
    -161: ("_VALUE_SERIALIZATION", "Local: Value serialization error"),
    -160: ("_KEY_DESERIALIZATION", "Local: Key deserialization error"),
    -159: ("_VALUE_DESERIALIZATION", "Local: Value deserialization error"),
    -158: ("_PARTIAL", "Local: Partial response"),
    -157: ("_READ_ONLY", "Local: Read-only object"),
    -156: ("_NOENT", "Local: No such entry"),
    -155: ("_UNDERFLOW", "Local: Read underflow"),
    -154: ("_INVALID_TYPE", "Local: Invalid type"),
    -153: ("_RETRY", "Local: Retry operation"),
    -152: ("_PURGE_QUEUE", "Local: Purged in queue"),
    -151: ("_PURGE_INFLIGHT", "Local: Purged in flight"),
    -150: ("_FATAL", "Local: Fatal error"),
    -149: ("_INCONSISTENT", "Local: Inconsistent state"),
    -148: ("_GAPLESS_GUARANTEE", "Local: Gap-less ordering would not be guaranteed if proceeding"),
    -147: ("_MAX_POLL_EXCEEDED", "Local: Maximum application poll interval (max.poll.interval.ms) exceeded"),
    -146: ("_UNKNOWN_BROKER", "Local: Unknown broker"),
    -145: ("_NOT_CONFIGURED", "Local: Functionality not configured"),
    -144: ("_FENCED", "Local: This instance has been fenced by a newer instance"),
    -143: ("_APPLICATION", "Local: Application generated error"),
    -142: ("_ASSIGNMENT_LOST", "Local: Group partition assignment lost"),
    -141: ("_NOOP", "Local: No operation performed"),
    -140: ("_AUTO_OFFSET_RESET", "Local: No offset to automatically reset to"),
    -139: ("_LOG_TRUNCATION", "Local: Partition log truncation detected"),
    -138: ("_INVALID_DIFFERENT_RECORD",
           "Local: an invalid record in the same batch caused the failure of this message too"),
    -137: ("_DESTROY_BROKER", "Local: Broker handle destroyed without termination"),
}

#: Where librdkafka's name differs from Kafka's, librdkafka's is the primary ``name()``.
LIBRDKAFKA_NAMES: dict[int, str] = {
    2: "INVALID_MSG",
    3: "UNKNOWN_TOPIC_OR_PART",
    4: "INVALID_MSG_SIZE",
    10: "MSG_SIZE_TOO_LARGE",
    17: "TOPIC_EXCEPTION",
}

#: Broker error codes (Apache Kafka 4.4.0's, generated): ``code -> (name, retriable, message)``.
BROKER_ERRORS = dict(_GENERATED_BROKER_ERRORS)

#: Extra aliases librdkafka and confluent-kafka users know.
EXTRA_ALIASES: dict[str, int] = {
    "UNKNOWN": -1,
    "STALE_CTRL_EPOCH": 11,
    "NOT_LEADER_FOR_PARTITION": 6,
    "GROUP_LOAD_IN_PROGRESS": 14,
    "GROUP_COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR_FOR_GROUP": 16,
    "NO_ERROR": 0,
}

#: Errors that librdkafka treats as fatal for an idempotent/transactional producer.
FATAL_CODES = frozenset({47, 90, 52, 53})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, ...
#: Local errors that are retriable.
RETRIABLE_LOCAL = frozenset({-195, -192, -187, -185, -180, -184, -166})


def _name_of(code: int) -> str:
    if code in LIBRDKAFKA_NAMES:
        return LIBRDKAFKA_NAMES[code]
    if code in BROKER_ERRORS:
        return BROKER_ERRORS[code][0]
    if code in LOCAL_ERRORS:
        return LOCAL_ERRORS[code][0]
    return f"ERR_{code}?"  # librdkafka's spelling for a code it does not know


def _message_of(code: int) -> str:
    if code in BROKER_ERRORS:
        name, _, message = BROKER_ERRORS[code]
        return f"Broker: {message or name}"
    if code in LOCAL_ERRORS:
        return LOCAL_ERRORS[code][1]
    return f"Err-{code}?"  # librdkafka's text for a code it does not know


if TYPE_CHECKING:
    class _CodeNames(type):
        """Type checkers see the error-code constants (``KafkaError.NOT_COORDINATOR``, ...)
        installed from the code tables below as class attributes of type int."""

        def __getattr__(cls, name: str) -> int: ...
else:
    _CodeNames = type


class KafkaError(metaclass=_CodeNames):
    """An error value: a code plus a reason, with the flags confluent-kafka exposes.

    Compares equal to other ``KafkaError`` objects and to plain integer codes.
    """

    __slots__ = ("_code", "_reason", "_fatal", "_retriable", "_txn_requires_abort")

    def __init__(
        self,
        error: int,
        reason: str | None = None,
        fatal: bool = False,
        retriable: bool | None = None,
        txn_requires_abort: bool = False,
    ) -> None:
        self._code = int(error)
        self._reason = reason
        self._fatal = bool(fatal)
        self._retriable = bool(retriable)
        self._txn_requires_abort = bool(txn_requires_abort)

    @classmethod
    def of(cls, error: int, reason: str | None = None, fatal: bool = False,
           retriable: bool | None = None, txn_requires_abort: bool = False) -> KafkaError:
        """The error as the client reports it: ``retriable`` defaults to the code's flag (the
        constructor, as confluent-kafka's, defaults it to False)."""
        if retriable is None:
            code = int(error)
            retriable = BROKER_ERRORS[code][1] if code in BROKER_ERRORS \
                else code in RETRIABLE_LOCAL
        return cls(error, reason, fatal, retriable, txn_requires_abort)

    def code(self) -> int:
        """The numeric error code."""
        return self._code

    def name(self) -> str:
        """The error's symbolic name (librdkafka's spelling)."""
        return _name_of(self._code)

    def str(self) -> str:
        """A human-readable description: the reason if one was given, else the code's text."""
        return self._reason if self._reason else _message_of(self._code)

    def fatal(self) -> bool:
        """True if the client instance can no longer be used."""
        return self._fatal

    def retriable(self) -> bool:
        """True if the operation may succeed when retried."""
        return self._retriable

    def txn_requires_abort(self) -> bool:
        """True if the current transaction must be aborted."""
        return self._txn_requires_abort

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    def __bool__(self) -> bool:
        return self._code != 0

    def __repr__(self) -> builtins.str:  # ``str`` here is the method above
        return (
            f'KafkaError{{code={self.name()},val={self._code},str="{self.str()}"}}'
        )

    #: ``str(err)`` is the same ``KafkaError{code=...,val=...,str="..."}`` text as
    #: confluent-kafka's; ``err.str()`` is the message alone.
    __str__ = __repr__


def _install_constants() -> None:
    for code, (name, _, _) in BROKER_ERRORS.items():
        setattr(KafkaError, name, code)
    for code, (name, _) in LOCAL_ERRORS.items():
        setattr(KafkaError, name, code)
    for code, name in LIBRDKAFKA_NAMES.items():
        setattr(KafkaError, name, code)
    for name, code in EXTRA_ALIASES.items():
        setattr(KafkaError, name, code)


_install_constants()


class KafkaException(Exception):
    """An exception carrying a ``KafkaError`` as ``args[0]`` (as confluent-kafka does)."""

    def __init__(self, error: KafkaError | int | Any = None, reason: str | None = None, **kw: Any):
        if isinstance(error, KafkaError):
            err = error
        elif isinstance(error, int):
            err = KafkaError.of(error, reason, **kw)
        else:
            err = KafkaError.of(KafkaError._FAIL, str(error) if error is not None else reason)
        super().__init__(err)

    @property
    def error(self) -> KafkaError:
        """The carried ``KafkaError``."""
        return self.args[0]

    def __str__(self) -> str:
        return repr(self.args[0])


class CorruptRecordError(KafkaException):
    """Malformed or corrupt record data (bad CRC, truncation, bad varint, forged length).

    ``position`` is the byte offset in the input where the problem was found.
    """

    def __init__(self, reason: str, position: int = -1) -> None:
        text = f"{reason} (at byte {position})" if position >= 0 else reason
        super().__init__(KafkaError.of(KafkaError.CORRUPT_MESSAGE, text))
        self.position = position


class DecompressionLimitError(CorruptRecordError):
    """Compressed record data that decompresses to more than the limit allows (one batch, or
    all batches of one record set together: ``kafka_fast.codecs.compression.MAX_DECOMPRESSED_SIZE``)."""


class ProtocolError(KafkaException):
    """A Kafka protocol frame that cannot be decoded (truncated, garbage, or unexpected)."""

    def __init__(self, reason: str) -> None:
        super().__init__(KafkaError.of(KafkaError._BAD_MSG, reason))


class ConfigError(KafkaException, ValueError):
    """An unknown configuration property or an invalid value."""

    def __init__(self, reason: str) -> None:
        super().__init__(KafkaError.of(KafkaError._INVALID_ARG, reason))
