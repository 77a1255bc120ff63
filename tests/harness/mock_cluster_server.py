"""Serve one librdkafka mock cluster; controlled by JSON lines on stdin/stdout.

Run: ``python mock_cluster_server.py [broker_count]``. The first stdout line is
``{"bootstrap": "...", "version": "...", "missing": [...]}``; then each stdin line
``{"id": n, "op": name, "args": {...}}`` gets one reply line ``{"id": n, "ok": true,
"result": ...}`` or ``{"id": n, "ok": false, "error": "..."}``. EOF on stdin ends it.
"""

from __future__ import annotations

import ctypes
import json
import sys

from rdkafka_mock import RD_KAFKA_PRODUCER, RdKafkaMock


class MockClusterServer:
    def __init__(self, broker_count: int) -> None:
        self.rk_lib = RdKafkaMock()
        lib = self.rk_lib
        conf = lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        for key, value in (("client.id", "mock-cluster-owner"), ("log_level", "4")):
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, 512) != 0:
                raise RuntimeError(f"conf {key}: {errstr.value.decode()}")
        self.rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, 512)
        if not self.rk:
            raise RuntimeError(f"rd_kafka_new: {errstr.value.decode()}")
        self.mc = lib.rd_kafka_mock_cluster_new(self.rk, broker_count)
        if not self.mc:
            raise RuntimeError("rd_kafka_mock_cluster_new failed")

    def close(self) -> None:
        self.rk_lib.rd_kafka_mock_cluster_destroy(self.mc)
        self.rk_lib.rd_kafka_destroy(self.rk)

    def hello(self) -> dict:
        return {
            "bootstrap": self.rk_lib.rd_kafka_mock_cluster_bootstraps(self.mc).decode(),
            "version": self.rk_lib.version(),
            "library": self.rk_lib.path,
            "missing": self.rk_lib.missing,
        }

    def _call(self, name: str, *args):
        if not self.rk_lib.has(name):
            raise RuntimeError(f"{name} is not in {self.rk_lib.path}")
        return getattr(self.rk_lib, name)(self.mc, *args)

    def _check(self, name: str, *args) -> None:
        err = self._call(name, *args)
        if err:
            raise RuntimeError(f"{name}: {self.rk_lib.err_name(err)} ({err})")

    # Operations, one per control command.

    def op_create_topic(self, topic: str, partitions: int, replication_factor: int) -> None:
        self._check("rd_kafka_mock_topic_create", topic.encode(), partitions, replication_factor)

    def op_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        self._check("rd_kafka_mock_partition_set_leader", topic.encode(), partition, broker_id)

    def op_set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        self._check("rd_kafka_mock_partition_set_follower", topic.encode(), partition, broker_id)

    def op_set_follower_wmarks(self, topic: str, partition: int, lo: int, hi: int) -> None:
        self._check(
            "rd_kafka_mock_partition_set_follower_wmarks", topic.encode(), partition, lo, hi
        )

    def op_push_leader_response(
        self, topic: str, partition: int, leader_id: int, leader_epoch: int
    ) -> None:
        self._check(
            "rd_kafka_mock_partition_push_leader_response",
            topic.encode(), partition, leader_id, leader_epoch,
        )

    def op_broker_down(self, broker_id: int) -> None:
        self._check("rd_kafka_mock_broker_set_down", broker_id)

    def op_broker_up(self, broker_id: int) -> None:
        self._check("rd_kafka_mock_broker_set_up", broker_id)

    def op_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        self._check("rd_kafka_mock_broker_set_rtt", broker_id, rtt_ms)

    def op_set_rack(self, broker_id: int, rack: str) -> None:
        self._check("rd_kafka_mock_broker_set_rack", broker_id, rack.encode())

    def op_push_errors(self, api_key: int, codes: list[int]) -> None:
        if self.rk_lib.has("rd_kafka_mock_push_request_errors_array"):
            array = (ctypes.c_int * len(codes))(*codes)
            self._call("rd_kafka_mock_push_request_errors_array", api_key, len(codes), array)
        else:  # older librdkafka: the variadic form
            tail = [ctypes.c_int(c) for c in codes]
            self._call("rd_kafka_mock_push_request_errors", api_key, len(codes), *tail)

    def op_clear_errors(self, api_key: int) -> None:
        self._call("rd_kafka_mock_clear_request_errors", api_key)

    def op_push_broker_errors_rtt(
        self, broker_id: int, api_key: int, errors: list[list[int]]
    ) -> None:
        tail = [ctypes.c_int(int(v)) for pair in errors for v in pair]
        self._check(
            "rd_kafka_mock_broker_push_request_error_rtts",
            broker_id, api_key, len(errors), *tail,
        )

    def op_broker_error_stack_cnt(self, broker_id: int, api_key: int) -> int:
        cnt = ctypes.c_size_t(0)
        self._check("rd_kafka_mock_broker_error_stack_cnt", broker_id, api_key, ctypes.byref(cnt))
        return cnt.value

    def op_set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        self._check("rd_kafka_mock_coordinator_set", key_type.encode(), key.encode(), broker_id)

    def op_set_apiversion(self, api_key: int, min_version: int, max_version: int) -> None:
        self._check("rd_kafka_mock_set_apiversion", api_key, min_version, max_version)

    def op_topic_set_error(self, topic: str, code: int) -> None:
        self._call("rd_kafka_mock_topic_set_error", topic.encode(), code)

    def op_start_request_tracking(self) -> None:
        self._call("rd_kafka_mock_start_request_tracking")

    def op_stop_request_tracking(self) -> None:
        self._call("rd_kafka_mock_stop_request_tracking")

    def op_clear_requests(self) -> None:
        self._call("rd_kafka_mock_clear_requests")

    def op_requests(self) -> list[list[int]]:
        lib = self.rk_lib
        cnt = ctypes.c_size_t(0)
        reqs = self._call("rd_kafka_mock_get_requests", ctypes.byref(cnt))
        out = []
        try:
            for i in range(cnt.value):
                r = reqs[i]
                out.append(
                    [
                        lib.rd_kafka_mock_request_id(r),
                        lib.rd_kafka_mock_request_api_key(r),
                        lib.rd_kafka_mock_request_timestamp(r),
                    ]
                )
        finally:
            if reqs:
                lib.rd_kafka_mock_request_destroy_array(reqs, cnt.value)
        return out

    def op_ping(self) -> str:
        return "pong"

    def handle(self, line: str) -> dict:
        try:
            msg = json.loads(line)
        except ValueError as exc:
            return {"id": None, "ok": False, "error": f"bad JSON: {exc}"}
        ident = msg.get("id")
        op = getattr(self, f"op_{msg.get('op')}", None)
        if op is None:
            return {"id": ident, "ok": False, "error": f"unknown op {msg.get('op')!r}"}
        try:
            return {"id": ident, "ok": True, "result": op(**msg.get("args", {}))}
        except Exception as exc:  # reported to the caller, the server keeps serving
            return {"id": ident, "ok": False, "error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    broker_count = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    server = MockClusterServer(broker_count)
    out = sys.stdout
    out.write(json.dumps(server.hello()) + "\n")
    out.flush()
    try:
        for line in sys.stdin:
            if line.strip():
                out.write(json.dumps(server.handle(line)) + "\n")
                out.flush()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
