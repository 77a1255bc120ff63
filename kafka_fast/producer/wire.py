"""The producer's Produce requests on the wire: framed and answered in compiled code.

``ProduceWire`` is the request the sender hands the client: the connection asks it for its
frame (``kafka_fast._native._producewire.frame_produce``: the fields around the encoded
batches in one buffer, each batch a chunk of its own) and for its response, walked into
columns (``ProduceResults``) when every partition succeeded, else decoded by the generated
``ProduceResponse`` decoder exactly as before (error codes, error messages, record errors,
current leaders and node endpoints are read there).

The layout of each version comes from the generated message classes: which fields a version
has (``Field.present``), where compact fields start (``FLEXIBLE_MIN``) and the header version
(``protocol.headers``). A version whose classes have a field the compiled layout does not know
is framed and decoded by the generated codec.
"""

from __future__ import annotations

from array import array
from typing import Any

from .._impl import load
from ..net.request import FramedRequest
from ..protocol import frame_request, headers
from ..protocol.messages import API_INDEX, ProduceRequest, ProduceResponse
from ..protocol.primitives import RECORDS_CHUNK_MIN

_wire, NATIVE = load("_producewire", "producewire")
frame_produce = _wire.frame_produce
parse_produce_response = _wire.parse_produce_response

__all__ = ["NATIVE", "ProduceResults", "ProduceWire", "frame_produce", "parse_produce_response",
           "request_layout", "response_layout"]

_TopicData = ProduceRequest.TopicProduceData
_PartitionData = ProduceRequest.TopicProduceData.PartitionProduceData
_PartitionResponse = ProduceResponse.PartitionProduceResponse

#: The fields the compiled layout writes and reads, per generated class.
_REQUEST_FIELDS = {
    ProduceRequest: {"transactional_id", "acks", "timeout_ms", "topic_data"},
    _TopicData: {"name", "topic_id", "partition_data"},
    _PartitionData: {"index", "records"},
}
_RESPONSE_FIELDS = {
    ProduceResponse: {"responses", "throttle_time_ms", "node_endpoints"},
    ProduceResponse.TopicProduceResponse: {"name", "topic_id", "partition_responses"},
    _PartitionResponse: {"index", "error_code", "base_offset", "log_append_time_ms",
                         "log_start_offset", "record_errors", "error_message", "current_leader"},
    ProduceResponse.BatchIndexAndErrorMessage: {"batch_index", "batch_index_error_message"},
}


def _field(cls: type, attr: str) -> Any:
    for f in cls.FIELDS:  # type: ignore[attr-defined]
        if f.attr == attr:
            return f
    raise LookupError(f"{cls.__name__} has no field {attr}")


def _known(table: dict[type, set[str]], version: int) -> bool:
    """True if every field ``version`` has in these classes is one the layout knows."""
    return all(f.attr in attrs or not f.present(version)
               for cls, attrs in table.items() for f in cls.FIELDS)  # type: ignore[attr-defined]


def _flexible(cls: type, version: int) -> bool:
    flexible_min = cls.FLEXIBLE_MIN  # type: ignore[attr-defined]
    return flexible_min is not None and version >= flexible_min


def request_layout(version: int) -> dict[str, Any] | None:
    """``frame_produce``'s layout arguments for this Produce version (None: a version the
    compiled layout cannot write)."""
    layout = _REQUEST_LAYOUTS.get(version)
    if layout is None and version not in _REQUEST_LAYOUTS:
        layout = None
        if (ProduceRequest.MIN_VERSION <= version <= ProduceRequest.MAX_VERSION
                and _known(_REQUEST_FIELDS, version)
                and _field(_PartitionData, "records").present(version)
                and not _field(_PartitionData, "records").tagged(version)):
            topic_ids = _field(_TopicData, "topic_id").present(version)
            if topic_ids != _field(_TopicData, "name").present(version):
                layout = {
                    "header_version": headers.request_header_version(ProduceRequest.API_KEY,
                                                                     version),
                    "flexible": _flexible(ProduceRequest, version),
                    "topic_ids": topic_ids,
                    "inline_below": RECORDS_CHUNK_MIN,
                }
        _REQUEST_LAYOUTS[version] = layout
    return layout


def response_layout(version: int) -> dict[str, Any] | None:
    """``parse_produce_response``'s layout arguments for this Produce version (None: a version
    the compiled layout cannot read)."""
    layout = _RESPONSE_LAYOUTS.get(version)
    if layout is None and version not in _RESPONSE_LAYOUTS:
        topic_response = ProduceResponse.TopicProduceResponse
        record_errors = _field(_PartitionResponse, "record_errors").present(version)
        layout = None
        if (ProduceResponse.MIN_VERSION <= version <= ProduceResponse.MAX_VERSION
                and _known(_RESPONSE_FIELDS, version)
                and _field(ProduceResponse, "throttle_time_ms").present(version)
                and record_errors == _field(_PartitionResponse, "error_message").present(version)
                and (_field(topic_response, "topic_id").present(version)
                     != _field(topic_response, "name").present(version))):
            layout = {
                "flexible": _flexible(ProduceResponse, version),
                "topic_ids": _field(topic_response, "topic_id").present(version),
                "append_time": _field(_PartitionResponse, "log_append_time_ms").present(version),
                "start_offset": _field(_PartitionResponse, "log_start_offset").present(version),
                "record_errors": record_errors,
            }
        _RESPONSE_LAYOUTS[version] = layout
    return layout


_REQUEST_LAYOUTS: dict[int, dict[str, Any] | None] = {}
_RESPONSE_LAYOUTS: dict[int, dict[str, Any] | None] = {}


class ProduceResults:
    """A Produce response in which every partition succeeded, as columns: row ``i`` is
    partition ``partition[i]`` of topic ``topics[topic_index[i]]`` (a name, or with Produce
    v13+ the topic id's 16 bytes)."""

    __slots__ = ("topics", "topic_index", "partition", "error_code", "base_offset",
                 "log_append_time", "log_start_offset", "throttle_time_ms")

    def __init__(self, topics: list[Any], topic_index: array, partition: array,
                 error_code: array, base_offset: array, log_append_time: array,
                 log_start_offset: array, throttle_time_ms: int) -> None:
        self.topics = topics
        self.topic_index = topic_index
        self.partition = partition
        self.error_code = error_code
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self.throttle_time_ms = throttle_time_ms

    def __len__(self) -> int:
        return len(self.partition)


def decode_produce_response(body: Any, version: int, nogil_bytes: int = -1) -> Any:
    """``ProduceResults`` when the columns carry the whole response, else the generated
    decoder's ``ProduceResponse`` (which also reports malformed bytes, as before)."""
    layout = _RESPONSE_LAYOUTS.get(version) or response_layout(version)
    if layout is not None:
        try:
            cols = parse_produce_response(body, nogil_bytes=nogil_bytes, **layout)
        except ValueError:
            cols = None  # the generated decoder names what is wrong
        if cols is not None:
            return ProduceResults(*cols)
    return ProduceResponse.decode(body, version)


class ProduceWire(FramedRequest):
    """One ProduceRequest: ``topics`` maps each topic name to its ``(partition, batch)``
    pairs, ``ids`` each topic name to its topic id (None if unknown; Produce v13+ needs them
    all: ``max_version`` keeps below it otherwise)."""

    __slots__ = ("transactional_id", "acks", "timeout_ms", "topics", "ids", "MAX_VERSION")
    API_KEY = ProduceRequest.API_KEY
    NAME = ProduceRequest.NAME
    MIN_VERSION = ProduceRequest.MIN_VERSION

    def __init__(self, transactional_id: str | None, acks: int, timeout_ms: int,
                 topics: dict[str, list[tuple[int, Any]]], ids: dict[str, Any],
                 max_version: int | None = None) -> None:
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topics = topics
        self.ids = ids
        highest = API_INDEX[ProduceRequest.API_KEY][6]
        self.MAX_VERSION = highest if max_version is None else min(max_version, highest)

    def message(self, version: int) -> ProduceRequest:
        """The same request as a generated message."""
        if _field(_TopicData, "topic_id").present(version):
            data = [_TopicData(topic_id=self.ids[t], partition_data=[
                _PartitionData(index=p, records=b) for p, b in parts])
                for t, parts in self.topics.items()]
        else:
            data = [_TopicData(name=t, partition_data=[
                _PartitionData(index=p, records=b) for p, b in parts])
                for t, parts in self.topics.items()]
        return ProduceRequest(transactional_id=self.transactional_id, acks=self.acks,
                              timeout_ms=self.timeout_ms, topic_data=data)

    def frame(self, version: int, correlation_id: int, client_id: str | None,
              nogil_bytes: int = -1) -> list:
        layout = _REQUEST_LAYOUTS.get(version) or request_layout(version)
        if layout is None:
            return frame_request(self.message(version), version, correlation_id, client_id)
        if layout["topic_ids"]:
            ids = self.ids
            topics: Any = [(ids[t].bytes, parts) for t, parts in self.topics.items()]
        else:
            topics = self.topics.items()
        return frame_produce(version, correlation_id, client_id, self.transactional_id,
                             self.acks, self.timeout_ms, topics, nogil_bytes=nogil_bytes,
                             **layout)

    def decode_response(self, body: Any, version: int, nogil_bytes: int = -1) -> Any:
        return decode_produce_response(body, version, nogil_bytes)
