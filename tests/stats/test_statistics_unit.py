"""Statistics pieces without a broker: windows, the "stats" client event, the doc tables."""

from __future__ import annotations

import json

from kafka_fast.net.events import EventQueue
from kafka_fast.stats import ClientStats, Window

from .doc_fields import documented


def test_window_min_max_avg_percentiles():
    w = Window()
    for v in range(1, 101):
        w.add(v)
    snap = w.snapshot()
    assert (snap["min"], snap["max"], snap["cnt"], snap["sum"]) == (1, 100, 100, 5050)
    assert snap["avg"] == 50
    assert snap["p50"] == 51 and snap["p99"] == 100


def test_stats_event_goes_to_stats_cb_on_serving_thread():
    got: list = []
    q = EventQueue(stats_cb=got.append)
    q.stats('{"a":1}')
    assert got == []  # queued, not called by the reporter
    assert q.serve() == 1
    assert got == ['{"a":1}']


def test_no_stats_cb_queues_nothing():
    q = EventQueue()
    q.stats("{}")
    assert q.serve() == 0


def test_empty_client_statistics_match_documented_top_level():
    sections, _ = documented()
    stats = json.loads(ClientStats("n", "c", "producer").to_json())
    assert set(stats) == sections["Top level"] - {"cgrp"}
