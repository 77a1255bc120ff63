"""A rolling restart of the 3-broker Apache Kafka cluster (each broker SIGTERMed and
restarted in turn, then each SIGKILLed and restarted) while an idempotent producer writes
numbered records with acks=all and a group of three consumer processes reads and commits,
one member SIGKILLed and replaced in each round.

Checked: every delivery report succeeds, in order, at offsets 0, 1, 2, ...; an independent
reader finds every record exactly once and in order per partition; the group reads every
record, repeating only what a revoked, lost or killed member had not committed.
CHAOS_RECORDS sets the number of records (default 500000), CHAOS_SEED the schedule.
"""

from __future__ import annotations

import signal
import time

import pytest
from chaos_run import env_int
from group_ledger import GroupLedger
from group_offsets import GroupOffsets
from harness.topics import create_topic, unique_topic
from member_processes import MemberProcesses
from paced_producer import Pacer, ProducerRun, expected_partitions
from sequence_check import delivery_problems, read_back

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(600)]

PARTITIONS = 6
MEMBERS = 3
OFFSETS_TOPIC = "__consumer_offsets"


def _show(problems: list[str], limit: int = 20) -> str:
    more = f"\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    return "\n".join(problems[:limit]) + more


def test_rolling_restart_under_load(apache_cluster, chaos, tmp_path):
    cluster = apache_cluster
    count = env_int("CHAOS_RECORDS", 500_000)
    rng = chaos.rng
    topic = unique_topic("chaos-roll")
    group = f"group-{topic}"
    create_topic(cluster, topic, PARTITIONS, replication_factor=3)
    cluster.wait_in_sync(topic)
    nodes = sorted(cluster.nodes)
    steps = ([(signal.SIGTERM, n) for n in rng.sample(nodes, len(nodes))]
             + [(signal.SIGKILL, n) for n in rng.sample(nodes, len(nodes))])
    member_kills = {rng.randrange(len(nodes)), len(nodes) + rng.randrange(len(nodes))}
    expected = expected_partitions(count, PARTITIONS)
    pacer = Pacer(count, len(steps) + 1, first_guess=12.0)
    producer = ProducerRun(cluster.client_config({
        "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        "queue.buffering.max.messages": 200_000}), topic, PARTITIONS, count, pacer)
    members = MemberProcesses(cluster.bootstrap, topic, group, tmp_path)
    offsets = GroupOffsets(cluster, group, topic, PARTITIONS)
    try:
        for _ in range(MEMBERS):
            members.start()
        producer.start()
        offsets.wait_for(lambda o: all(v >= 0 for v in o.values()), 90,
                         "a first commit on every partition", members.check_alive)
        cluster.wait_in_sync(OFFSETS_TOPIC)
        for k, (sig, node) in enumerate(steps):
            pacer.next_phase()
            chaos.fault(f"{sig.name} broker {node} ({producer.produced} records produced)")
            cluster.stop_node(node, sig)
            if k in member_kills:
                victim = rng.choice(members.running())
                chaos.fault(f"SIGKILL group member {victim}")
                members.kill(victim)
                chaos.fault(f"group member {members.start()} joins")
            time.sleep(rng.uniform(0.5, 3.0))
            chaos.fault(f"start broker {node}")
            cluster.start_node(node)
            cluster.wait_for_brokers()
            cluster.wait_in_sync(topic)
            cluster.wait_in_sync(OFFSETS_TOPIC)
            members.check_alive()
        pacer.finish()
        producer.result(timeout=180)
        chaos.fault(f"schedule done, {count} records produced")
        final = offsets.wait_for(
            lambda o: all(o.get(p) == len(v) for p, v in expected.items()), 120,
            "the group's commits reaching the end of every partition", members.check_alive)
    finally:
        exits = members.stop_all()
        offsets.close()

    assert producer.unflushed == 0, f"{producer.unflushed} records not flushed"
    assert producer.failures == [], producer.failure_summary()
    fatal = [e for e in producer.client_errors if e.fatal()]
    assert fatal == [], fatal
    problems = delivery_problems(producer.delivered, expected)
    assert problems == [], _show(problems)
    chaos.check("delivery reports", count)

    stored, problems = read_back(cluster, topic, expected)
    assert problems == [], _show(problems)
    chaos.check("records read back", count)

    assert exits == {name: 0 for name in exits}, members.outputs()
    ledger = GroupLedger({p: [v.decode() for v in values] for p, values in stored.items()})
    for m in members.members.values():
        ledger.read(m.name, m.log, m.killed)
    ledger.check(final)
    print(f"chaos: group: {ledger.summary()}")
    print(f"chaos: producer client errors: {[e.name() for e in producer.client_errors]}")
    assert ledger.violations == [], _show(ledger.violations) + "\n" + ledger.summary()
    chaos.check("records read by the group", ledger.records)
