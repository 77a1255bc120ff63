"""ctypes bindings for librdkafka's mock cluster API, from the confluent-kafka wheel.

Signatures follow ``rdkafka_mock.h`` (librdkafka 2.x) and are hard-coded so no
header is needed at run time. Only functions present in the loaded library are
bound; ``MISSING`` lists the others.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
from ctypes import (
    POINTER,
    c_char_p,
    c_int,
    c_int16,
    c_int32,
    c_int64,
    c_size_t,
    c_void_p,
)

RD_KAFKA_PRODUCER = 0

_p = c_void_p
# name: (restype, argtypes); "..." marks a variadic tail.
SIGNATURES: dict[str, tuple[object, list]] = {
    "rd_kafka_version_str": (c_char_p, []),
    "rd_kafka_err2name": (c_char_p, [c_int]),
    "rd_kafka_err2str": (c_char_p, [c_int]),
    "rd_kafka_conf_new": (_p, []),
    "rd_kafka_conf_set": (c_int, [_p, c_char_p, c_char_p, c_char_p, c_size_t]),
    "rd_kafka_new": (_p, [c_int, _p, c_char_p, c_size_t]),
    "rd_kafka_destroy": (None, [_p]),
    "rd_kafka_mock_cluster_new": (_p, [_p, c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [_p]),
    "rd_kafka_mock_cluster_bootstraps": (c_char_p, [_p]),
    "rd_kafka_mock_clear_request_errors": (None, [_p, c_int16]),
    "rd_kafka_mock_push_request_errors_array": (None, [_p, c_int16, c_size_t, POINTER(c_int)]),
    "rd_kafka_mock_push_request_errors": (None, [_p, c_int16, c_size_t, "..."]),
    "rd_kafka_mock_broker_push_request_error_rtts": (c_int, [_p, c_int32, c_int16, c_size_t, "..."]),
    "rd_kafka_mock_broker_error_stack_cnt": (c_int, [_p, c_int32, c_int16, POINTER(c_size_t)]),
    "rd_kafka_mock_topic_set_error": (None, [_p, c_char_p, c_int]),
    "rd_kafka_mock_topic_create": (c_int, [_p, c_char_p, c_int, c_int]),
    "rd_kafka_mock_partition_set_leader": (c_int, [_p, c_char_p, c_int32, c_int32]),
    "rd_kafka_mock_partition_set_follower": (c_int, [_p, c_char_p, c_int32, c_int32]),
    "rd_kafka_mock_partition_set_follower_wmarks": (
        c_int, [_p, c_char_p, c_int32, c_int64, c_int64]
    ),
    "rd_kafka_mock_partition_push_leader_response": (c_int, [_p, c_char_p, c_int, c_int32, c_int32]),
    "rd_kafka_mock_broker_set_down": (c_int, [_p, c_int32]),
    "rd_kafka_mock_broker_set_up": (c_int, [_p, c_int32]),
    "rd_kafka_mock_broker_set_rtt": (c_int, [_p, c_int32, c_int]),
    "rd_kafka_mock_broker_set_rack": (c_int, [_p, c_int32, c_char_p]),
    "rd_kafka_mock_coordinator_set": (c_int, [_p, c_char_p, c_char_p, c_int32]),
    "rd_kafka_mock_set_apiversion": (c_int, [_p, c_int16, c_int16, c_int16]),
    "rd_kafka_mock_start_request_tracking": (None, [_p]),
    "rd_kafka_mock_stop_request_tracking": (None, [_p]),
    "rd_kafka_mock_clear_requests": (None, [_p]),
    "rd_kafka_mock_get_requests": (POINTER(_p), [_p, POINTER(c_size_t)]),
    "rd_kafka_mock_request_id": (c_int32, [_p]),
    "rd_kafka_mock_request_api_key": (c_int16, [_p]),
    "rd_kafka_mock_request_timestamp": (c_int64, [_p]),
    "rd_kafka_mock_request_destroy_array": (None, [POINTER(_p), c_size_t]),
}


def library_path() -> str:
    """The librdkafka shared object bundled in the confluent-kafka wheel."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        raise RuntimeError("confluent-kafka is not installed")
    site = os.path.dirname(os.path.dirname(spec.origin))
    found = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if not found:
        raise RuntimeError(f"no librdkafka in {site}/confluent_kafka.libs")
    return found[0]


class RdKafkaMock:
    """The loaded library with typed functions as attributes (``lib.rd_kafka_mock_...``)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or library_path()
        self.lib = ctypes.CDLL(self.path)
        self.missing: list[str] = []
        for name, (restype, argtypes) in SIGNATURES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                self.missing.append(name)
                continue
            fn.restype = restype
            # ctypes passes extra arguments past argtypes to a variadic tail.
            fn.argtypes = [a for a in argtypes if a != "..."]
            setattr(self, name, fn)

    def has(self, name: str) -> bool:
        return name in SIGNATURES and name not in self.missing

    def version(self) -> str:
        return self.rd_kafka_version_str().decode()

    def err_name(self, code: int) -> str:
        return self.rd_kafka_err2name(code).decode()
