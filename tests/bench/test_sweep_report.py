"""The cost sweep: its plan (points, records per point) and the docs table and chart drawn
from its stored lines. (Figures are measured by benchmarks/bench_sweep.py, never asserted.)"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

from benchmarks.bench_sweep import BASE, plan, records_for

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_report", ROOT / "tools" / "bench_report.py")
bench_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_report)

#: one stored line of the sweep as bench_sweep.py writes it (values of 1 KB)
LINE = {
    "bench": "sweep", "time": "2026-11-27T06:30:00+00:00", "commit": "0123456789ab",
    "machine": {"cpu": "Test CPU", "cpus": 2, "memory_gb": 8.0, "kernel": "6.1",
                "python": "3.11.7"},
    "broker": "Apache Kafka 4.3.1 (1 node)",
    "settings": {"sweep_id": "20261127T063000Z-abcdef", "dimensions": ["size"],
                 "point": {**BASE, "size": 1000}, "base": BASE, "records": 1000,
                 "value_bytes": 1000, "key_bytes": 10, "partitions": 6, "nodes": 1,
                 "acks": ["1"], "codecs": ["none"], "repeat": 1, "cases": [],
                 "client_settings": {}, "machine_state": "quiet", "other_cpu_share": 0.02},
    "results": [
        {"client": "kafka_fast", "path": "produce_batch", "direction": "produce",
         "records": 1000, "nbytes": 1_010_000, "wall_s": 0.01, "cpu_s": 0.002, "error": "",
         "broker_cpu_s": 0.01, "max_rss_mb": 120.0, "acks": "1"},
        {"client": "confluent", "path": "produce()", "direction": "produce", "records": 1000,
         "nbytes": 1_010_000, "wall_s": 0.02, "cpu_s": 0.008, "error": "",
         "broker_cpu_s": 0.01, "max_rss_mb": 150.0, "acks": "1"},
        {"client": "kafka_fast", "path": "consume_batch", "direction": "consume",
         "records": 1000, "nbytes": 1_010_000, "wall_s": 0.005, "cpu_s": 0.001, "error": "",
         "broker_cpu_s": 0.01, "max_rss_mb": 90.0, "acks": "1"},
        {"client": "confluent", "path": "consume(10000)", "direction": "consume",
         "records": 1000, "nbytes": 1_010_000, "wall_s": 0.01, "cpu_s": 0.004, "error": "",
         "broker_cpu_s": 0.01, "max_rss_mb": 100.0, "acks": "1"},
    ],
}


def _line(size: int, time: str, state: str = "quiet", dimension: str = "size",
          wall: float = 0.01, **point: object) -> dict:
    line = copy.deepcopy(LINE)
    line["time"] = time
    line["settings"].update(point={**BASE, "size": size, **point}, dimensions=[dimension],
                            value_bytes=size, machine_state=state)
    line["results"][0]["wall_s"] = wall
    return line


def _store(tmp_path: Path, lines: list[dict]) -> None:
    with open(tmp_path / "sweep.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)


def test_the_plan_runs_the_base_point_once_and_scales_records_by_size():
    points = plan(["size", "acks", "codec", "brokers"], megabytes=100, least=100,
                  most=1_000_000, consume_all=False)
    labels = [p.label for p in points]
    assert labels == ["size=10", "base", "size=1000", "size=10000", "size=999000",
                      "acks=all", "codec=gzip", "codec=snappy", "codec=lz4", "codec=zstd",
                      "brokers=3"]
    base = points[1]
    assert base.settings == BASE and base.dimensions == ["size", "acks", "codec", "brokers"]
    assert base.consume and not points[5].consume  # only the size and partition points read
    assert [p.records for p in points[:5]] == [1_000_000, 910_000, 100_000, 10_000, 100]
    assert records_for(999_000, 100, 100, 1_000_000) == 100
    assert records_for(100, 0.5, 100, 1_000_000) == 4_545  # under 5,000: not rounded
    assert base.cases() == ["kafka_fast.produce_batch", "kafka_fast.produce",
                            "confluent.produce", "kafka_fast.consume_batch",
                            "confluent.consume"]


def test_a_sweep_block_shows_every_point_of_its_dimension(tmp_path):
    _store(tmp_path, [
        _line(1000, "2026-11-27T06:00:00+00:00", dimension="codec", codec="zstd"),  # off
        _line(100, "2026-11-27T06:00:00+00:00"),
        _line(1000, "2026-11-27T06:10:00+00:00", wall=0.02),
        _line(1000, "2026-11-27T06:20:00+00:00", state="loaded", wall=0.04),  # quiet kept
        _line(10, "2026-11-27T06:30:00+00:00", state="loaded"),  # only a loaded one: shown
        _line(1000, "2026-11-27T06:40:00+00:00", dimension="acks", acks="all"),  # off the line
    ])
    out = bench_report.update("<!-- bench: sweep dimension=size broker=Apache -->\n"
                              "<!-- /bench -->\n", tmp_path)
    assert "![CPU per record, rate and peak memory against value bytes]" \
           "(bench/sweep-size.png)" in out
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and line[2].isdigit()]
    assert [r[:5] for r in rows] == [
        ["10", "produce", "kafka_fast produce_batch", "1,000", "100,000"],
        ["10", "produce", "confluent produce()", "1,000", "50,000"],
        ["10", "consume", "kafka_fast consume_batch", "1,000", "200,000"],
        ["10", "consume", "confluent consume(10000)", "1,000", "100,000"],
        ["100", "produce", "kafka_fast produce_batch", "1,000", "100,000"],
        ["100", "produce", "confluent produce()", "1,000", "50,000"],
        ["100", "consume", "kafka_fast consume_batch", "1,000", "200,000"],
        ["100", "consume", "confluent consume(10000)", "1,000", "100,000"],
        ["1,000", "produce", "kafka_fast produce_batch", "1,000", "50,000"],
        ["1,000", "produce", "confluent produce()", "1,000", "50,000"],
        ["1,000", "consume", "kafka_fast consume_batch", "1,000", "200,000"],
        ["1,000", "consume", "confluent consume(10000)", "1,000", "100,000"]]
    # CPU s/M, x CPU against confluent's row of the same direction and point, peak RSS
    assert [r[6:] for r in rows[:4]] == [["2.00", "0.25", "120"], ["8.00", "1.00", "150"],
                                         ["1.00", "0.25", "90"], ["4.00", "1.00", "100"]]
    assert "**Loaded machine** at 10:" in out and "commit `0123456789ab`" in out
    assert "partitions 6, brokers 1, acks 1, codec none" in out
    assert bench_report.update(out, tmp_path) == out
    # the base point (codec none) lies on every dimension; on another broker nothing matches
    codec = bench_report.update("<!-- bench: sweep dimension=codec -->\n<!-- /bench -->",
                                tmp_path)
    assert "| none | produce | kafka_fast produce_batch | 1,000 | 100,000 |" in codec
    # codecs in the sweep's order, not the alphabet's
    (tmp_path / "codecs").mkdir()
    _store(tmp_path / "codecs", [
        _line(100, f"2026-11-27T07:0{i}:00+00:00", dimension="codec", codec=codec)
        for i, codec in enumerate(("zstd", "gzip"))])
    shown = bench_report.update("<!-- bench: sweep dimension=codec -->\n<!-- /bench -->",
                                tmp_path / "codecs")
    assert [line.split("|")[1].strip() for line in shown.splitlines()
            if line.startswith("| ") and "produce_batch" in line] == ["gzip", "zstd"]
    empty = bench_report.update("<!-- bench: sweep dimension=codec broker=Tansu -->\n"
                                "<!-- /bench -->", tmp_path)
    assert "No stored sweep line matches yet: `make bench-sweep`" in empty


def test_the_sweep_chart_is_drawn_from_the_stored_lines(tmp_path):
    import matplotlib.image

    _store(tmp_path, [_line(100, "2026-11-27T06:00:00+00:00"),
                      _line(1000, "2026-11-27T06:10:00+00:00"),
                      _line(1000, "2026-11-27T06:10:00+00:00", dimension="acks", acks="all")])
    blocks = ["<!-- bench: sweep dimension=size -->\n<!-- /bench -->",
              "<!-- bench: sweep dimension=acks chart=acks.png -->\n<!-- /bench -->",
              "<!-- bench: sweep dimension=codec broker=Tansu -->\n<!-- /bench -->"]
    drawn = bench_report.sweep_charts(blocks, tmp_path, tmp_path)
    # no stored line is from Tansu: no chart for that block
    assert drawn == [tmp_path / "sweep-size.png", tmp_path / "acks.png"]
    image = matplotlib.image.imread(drawn[0])
    assert image.shape[:2] == (480, 1600)  # 16 x 4.8 inches at 100 dpi
    assert (tmp_path / "acks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_held_objects_point_joins_the_base_on_one_line(tmp_path):
    import matplotlib.image

    from benchmarks.bench_sweep import chosen

    held = _line(100, "2026-11-27T06:10:00+00:00", dimension="held", held=1_000_000)
    for row in held["results"]:
        row["path"] += " +1M held"
    base = _line(100, "2026-11-27T06:00:00+00:00")
    base["settings"]["dimensions"] = ["size", "held"]
    _store(tmp_path, [base, held])
    out = bench_report.update("<!-- bench: sweep dimension=held -->\n<!-- /bench -->",
                              tmp_path)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and line[2].isdigit()]
    assert [(r[0], r[2], r[7]) for r in rows] == [
        ("0", "kafka_fast produce_batch", "0.25"), ("0", "confluent produce()", "1.00"),
        ("0", "kafka_fast consume_batch", "0.25"), ("0", "confluent consume(10000)", "1.00"),
        ("1,000,000", "kafka_fast produce_batch +1M held", "0.25"),
        ("1,000,000", "confluent produce() +1M held", "1.00"),
        ("1,000,000", "kafka_fast consume_batch +1M held", "0.25"),
        ("1,000,000", "confluent consume(10000) +1M held", "1.00")]
    (chart,) = bench_report.sweep_charts(
        ["<!-- bench: sweep dimension=held -->\n<!-- /bench -->"], tmp_path, tmp_path)
    assert matplotlib.image.imread(chart).shape[:2] == (480, 1600)
    # the plan: the held point reads too; --values keeps chosen values of one dimension
    points = plan(["partitions", "held"], 100, 100, 1_000_000, False)
    assert [p.label for p in points if p.consume] == [p.label for p in points]
    kept = chosen(points, ["partitions=1,1000"])
    assert [p.label for p in kept] == ["partitions=1", "partitions=1000", "base",
                                       "held=1000000"]
