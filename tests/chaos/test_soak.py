"""The soak of tests/chaos/soak.py for 3 minutes (``make soak`` runs it for 30): kafka_fast's
idempotent producer, transactional consume-transform-produce loop and consumer group in one
process, through Toxiproxy to a 3-node Apache Kafka cluster whose brokers are restarted in
turn every minute (stopped alternately with SIGTERM and SIGKILL) while toxics come and go.

Checked with real data: every record exactly once and in order per partition (delivery
reports and the log read back), every input's result exactly once in the read_committed
target, nothing missed by the group, the client's RSS, threads, descriptors and connections
bounded (soak_checks.MARGINS), no counter stalled past soak_checks.STALL_LIMIT.
SOAK_SECONDS changes the length.
"""

from __future__ import annotations

import pytest
import toxiproxy_schedule as sched
from chaos_run import env_int
from harness.apache_kafka import require_apache_kafka
from harness.toxiproxy import require_toxiproxy, start_proxied_cluster
from soak import RESTART_TIMEOUT, SoakSettings, run_soak

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]


def test_soak_under_restarts_and_toxics(tmp_path, chaos_seed):
    require_apache_kafka()
    require_toxiproxy()
    seconds = env_int("SOAK_SECONDS", 180, minimum=120)
    settings = SoakSettings(seconds=seconds, rate=50, restart_every=60.0, seed=chaos_seed)
    cluster = start_proxied_cluster(tmp_path / "cluster", RESTART_TIMEOUT)
    try:
        result = run_soak(cluster, tmp_path / "soak", settings)
    finally:
        cluster.stop()
    samples = result.pop("samples")
    print({k: v for k, v in result.items() if k != "events"})
    assert result["violations"] == [], result["violations"]
    # The schedule happened: every broker restarted at least once, SIGTERM and SIGKILL stops
    # both among them, every fault applied, the client sampled about every second, all
    # records through every workload.
    assert result["broker_restarts"] >= 3, result["events"]
    assert result["restarts_by_signal"].get("SIGTERM", 0) >= 1, result["events"]
    assert result["restarts_by_signal"].get("SIGKILL", 0) >= 1, result["events"]
    assert set(result["toxics"]) == set(sched.FAULTS), result["toxics"]
    assert len(samples) >= seconds * 0.8, len(samples)
    assert result["target_records"] == settings.records
    assert samples[-1]["delivered"] == settings.records
    assert samples[-1]["grouped"] == settings.records

