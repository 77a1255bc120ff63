"""The Kafka wire protocol: message classes generated from Apache Kafka's JSON schemas.

``messages`` holds one class per request, response, header and data message (imported on
first use); ``API_KEYS`` maps an API key to its (request, response) classes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from kafka_fast.protocol import headers, messages
from kafka_fast.protocol.base import DEFAULT, Field, Message, Struct
from kafka_fast.protocol.framing import decode_response, frame_request

__all__ = [
    "API_KEYS", "API_VERSIONS", "DEFAULT", "Field", "Message", "Struct", "by_name", "decode_response",
    "frame_request", "headers", "messages",
]


class _ApiKeys(Mapping):
    """API key -> (request class, response class); classes are imported on first access."""

    def __getitem__(self, api_key: int) -> tuple[type, type]:
        request, response = messages.API_INDEX[api_key][:2]
        return getattr(messages, request), getattr(messages, response)

    def __iter__(self) -> Iterator[int]:
        return iter(messages.API_INDEX)

    def __len__(self) -> int:
        return len(messages.API_INDEX)

    def __contains__(self, api_key: object) -> bool:
        return api_key in messages.API_INDEX

    def __repr__(self) -> str:
        return f"API_KEYS({len(self)} APIs)"


API_KEYS: Mapping[int, tuple[type[Message], type[Message]]] = _ApiKeys()

#: API key -> (lowest, highest) request version this client negotiates, without importing the
#: message classes (version negotiation needs only these). The highest is the one the client's
#: code fills every field of (tools/gen_protocol.py's CLIENT_APIS); the classes encode and
#: decode up to their MAX_VERSION, the newest the schemas define.
API_VERSIONS: Mapping[int, tuple[int, int]] = {
    key: (entry[4], entry[6]) for key, entry in messages.API_INDEX.items()}


def by_name(name: str) -> type:
    """The message class with this schema name, e.g. ``by_name("FetchResponse")``."""
    if name not in messages.MODULES:
        raise KeyError(f"no Kafka message named {name!r}")
    return getattr(messages, name)
