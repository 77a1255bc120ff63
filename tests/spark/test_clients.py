"""The per-worker client cache: reuse by configuration, fork safety, close at exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from harness import create_topic, unique_topic
from harness.reference_client import consume

from kafka_fast.spark import clients, writer


class Closable:
    def __init__(self, conf):
        self.conf = conf
        self.closed = False

    def close(self):
        self.closed = True


def test_cache_is_keyed_by_role_and_configuration():
    clients.close_all()  # from empty: Spark tests of this process may have cached clients
    try:
        a = clients.cached("producer", {"bootstrap.servers": "x:1", "linger.ms": 5}, Closable)
        b = clients.cached("producer", {"linger.ms": 5, "bootstrap.servers": "x:1"}, Closable)
        c = clients.cached("consumer", {"bootstrap.servers": "x:1", "linger.ms": 5}, Closable)
        d = clients.cached("producer", {"bootstrap.servers": "x:1", "linger.ms": 6}, Closable)
        assert a is b and a is not c and a is not d
        assert a.conf == {"bootstrap.servers": "x:1", "linger.ms": 5}
        assert clients.cached_count() == 3
        clients.discard("producer", {"bootstrap.servers": "x:1", "linger.ms": 5})
        assert a.closed and not c.closed and clients.cached_count() == 2
    finally:
        clients.close_all()
    assert c.closed and d.closed and clients.cached_count() == 0


class FailsToClose(Closable):
    def close(self):
        raise RuntimeError("close failed")

    def purge(self):
        raise RuntimeError("purge failed")


def test_failures_while_closing_or_purging_are_logged_not_raised(caplog):
    conf = {"bootstrap.servers": "x:1", "client.id": "fails-to-close"}
    try:
        producer = clients.cached("producer", conf, FailsToClose)
        with caplog.at_level("WARNING", logger="kafka_fast.spark"):
            writer._abandon(producer, conf)  # purges, then discards (closes) the client
        assert clients.cached_count() == 0
    finally:
        clients.close_all()
    messages = [r.getMessage() for r in caplog.records if r.name == "kafka_fast.spark"]
    assert any("purging the producer" in m for m in messages), messages
    assert any("closing a cached client" in m for m in messages), messages
    assert all(r.exc_info for r in caplog.records if r.name == "kafka_fast.spark")


def test_a_forked_child_does_not_reuse_its_parents_clients():
    parent = clients.cached("producer", {"bootstrap.servers": "x:1"}, Closable)
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: must build its own
            child = clients.cached("producer", {"bootstrap.servers": "x:1"}, Closable)
            os.write(write, b"same" if child is parent else b"new")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(read, 16) == b"new"
        assert clients.cached("producer", {"bootstrap.servers": "x:1"}, Closable) is parent
    finally:
        clients.close_all()


def test_cached_producer_is_closed_and_flushed_at_interpreter_exit(kafka):
    topic = unique_topic("spark-exit")
    create_topic(kafka, topic, 1)
    script = textwrap.dedent(f"""
        from kafka_fast.producer import Producer
        from kafka_fast.spark import clients
        producer = clients.cached("producer", {kafka.client_config({"linger.ms": 3000})!r},
                                  Producer)
        producer.produce({topic!r}, value=b"sent at exit", key=b"k")
        # no flush: only the close registered with atexit can deliver it
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    [record] = consume(kafka, topic, 1, 1)
    assert (record.offset, record.key, record.value) == (0, b"k", b"sent at exit")
