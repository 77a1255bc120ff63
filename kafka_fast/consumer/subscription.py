"""What ``subscribe()`` accepts, and the event for subscribed topics the cluster lacks.

As librdkafka (and so confluent-kafka) does for the classic group protocol: after each
metadata refresh, every subscribed topic the cluster does not have (or reports an error
for), and every ``^regex`` that matches no topic, is handed to the application once, as a
``Message`` returned by ``poll()``/``consume()`` whose ``error()`` is
``UNKNOWN_TOPIC_OR_PART`` (or the topic's own error) and whose ``topic()`` is the name or
the pattern: "Subscribed topic not available: NAME: Broker: Unknown topic or partition". A
topic is reported again only after it was seen available (or with another error) in
between, or after a new ``subscribe()``. Leader elections in progress are not reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..cluster.metadata import RETRY_TOPIC_ERRORS
from ..cluster.view import ClusterView
from ..errors import KafkaError, KafkaException
from ..message import TIMESTAMP_NOT_AVAILABLE, Message

if TYPE_CHECKING:
    from ..net import KafkaClient

E = KafkaError
PREFIX = "Subscribed topic not available"
#: librdkafka's texts for the codes a subscription most often meets (others use ours).
_TEXTS = {
    E.UNKNOWN_TOPIC_OR_PART: "Broker: Unknown topic or partition",
    E.TOPIC_AUTHORIZATION_FAILED: "Broker: Topic authorization failed",
}


def check_subscription(topics: Any) -> list[str]:
    """The topics of a ``subscribe()`` call, or the error confluent-kafka raises: TypeError for
    something that is not a list of str, KafkaException ``_INVALID_ARG`` for an empty list or
    an empty name, and for a ``^regex`` that does not compile."""
    if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) for t in topics):
        raise TypeError(f"subscribe() expects a list of topic names, not {topics!r}")
    if not topics or not all(topics):
        raise KafkaException(KafkaError.of(
            E._INVALID_ARG, "Failed to set subscription: Local: Invalid argument or "
            f"configuration (an empty {'list' if not topics else 'topic name'})"))
    for t in topics:
        if t.startswith("^"):
            try:
                re.compile(t)
            except re.error as exc:
                raise KafkaException(KafkaError.of(
                    E._INVALID_ARG, f"invalid subscription regex {t!r}: {exc}")) from None
    return list(topics)


def unavailable_message(topic: str, code: int) -> Message:
    """The consumer event for a subscribed ``topic`` (or pattern) the cluster lacks."""
    text = f"{PREFIX}: {topic}: {_TEXTS.get(code) or KafkaError.of(code).str()}"
    return Message(topic=topic, partition=0, value=text.encode(),
                   error=KafkaError.of(code, text, retriable=False),
                   timestamp=(TIMESTAMP_NOT_AVAILABLE, -1))


class SubscriptionWatch:
    """Reports the unavailable topics of the current subscription (I/O thread).

    ``post`` queues a consumer event for the polling thread; ``watch`` and ``stop`` run on
    the I/O thread, as do the metadata listener's calls.
    """

    def __init__(self, client: KafkaClient, post: Callable[[tuple], None]) -> None:
        self._client = client
        self._post = post
        self._literal: list[str] = []
        self._patterns: list[tuple[str, re.Pattern]] = []
        self._errored: dict[str, int] = {}
        self._active = False
        client.metadata.listeners.append(self._on_metadata)

    def watch(self, topics: Sequence[str]) -> None:
        """A new subscription: forget what was reported and ask the cluster about it."""
        self._literal = [t for t in topics if not t.startswith("^")]
        self._patterns = [(t, re.compile(t)) for t in topics if t.startswith("^")]
        self._errored = {}
        self._active = True
        self._client.request_metadata(self._literal or None, all_topics=bool(self._patterns))

    def stop(self) -> None:
        self._active = False
        self._errored = {}

    def _on_metadata(self, view: ClusterView, covered: frozenset[str] | None) -> None:
        if not self._active:
            return
        now: dict[str, int] = {}
        seen: set[str] = set()
        for name in self._literal:
            if covered is not None and name not in covered:
                continue
            info = view.topics.get(name)
            code = (E.UNKNOWN_TOPIC_OR_PART if info is None
                    else info.error.code() if info.error is not None else 0)
            if code in RETRY_TOPIC_ERRORS:
                continue
            seen.add(name)
            if code:
                now[name] = code
        if covered is None and self._patterns:
            names = [n for n, info in view.topics.items()
                     if not info.is_internal and not n.startswith("__")]
            for text, pattern in self._patterns:
                seen.add(text)
                if not any(pattern.match(n) for n in names):
                    now[text] = E.UNKNOWN_TOPIC_OR_PART
        for name in seen:
            code = now.get(name, 0)
            if not code:
                self._errored.pop(name, None)
            elif self._errored.get(name) != code:
                self._errored[name] = code
                self._post(("message", unavailable_message(name, code)))
