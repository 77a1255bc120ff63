"""Benchmark results as data: stored runs, the tables generated from them, and the Java
client's perf tools as anchors on the real broker. (Figures are measured by the benchmarks,
never asserted here.)"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from harness import create_topic, unique_topic

from kafka_fast.bench import java, store
from kafka_fast.bench.payload import Payload
from kafka_fast.bench.worker import hold_objects

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_report", ROOT / "tools" / "bench_report.py")
bench_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_report)


def _row(client: str, path: str, records: int, wall: float, cpu: float) -> dict:
    return {"client": client, "path": path, "direction": "produce", "records": records,
            "nbytes": records * 110, "wall_s": wall, "cpu_s": cpu, "error": "",
            "broker_cpu_s": 0.5, "acks": "1", "records_per_s": round(records / wall)}


def _run(broker: str, records: int, rows: list[dict]) -> dict:
    settings = {"records": records, "value_bytes": 100, "key_bytes": 10, "partitions": 6,
                "codecs": ["none"], "acks": ["1"], "repeat": 3, "cases": [], "client_settings": {}}
    return store.record("produce", broker, settings, rows)


def test_runs_are_appended_and_read_back(tmp_path):
    first = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.5, 0.25)])
    second = _run("Apache Kafka 4.3.1", 2000, [_row("confluent", "produce()", 2000, 1.0, 2.0)])
    path = store.append(tmp_path, first)
    assert store.append(tmp_path, second) == path == tmp_path / "produce.jsonl"
    assert store.load(path) == [first, second]
    assert first["machine"]["cpus"] >= 1 and first["commit"]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    with pytest.raises(ValueError, match=r"produce.jsonl:3: not a JSON result line"):
        store.load(path)


def test_blocks_show_the_newest_matching_run(tmp_path):
    store.append(tmp_path, _run("Tansu (embedded)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.5, 0.25),
        _row("confluent", "produce()", 1000, 1.0, 1.0)]))
    store.append(tmp_path, _run("Tansu (embedded)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.25, 0.125),
        _row("confluent", "produce()", 1000, 1.0, 1.0)]))
    store.append(tmp_path, _run("Apache Kafka", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.1, 0.1)]))
    text = "intro\n<!-- bench: produce broker=Tansu records=1000 -->\nold\n<!-- /bench -->\nend\n"
    out = bench_report.update(text, tmp_path)
    table = out.split("```")[1]
    rows = [line.split() for line in table.splitlines() if line.startswith("produce ")]
    # The newest Tansu run (4,000 records/s), with the ratio to confluent-kafka's produce().
    assert rows == [["produce", "kafka_fast", "produce()", "4,000", "0.4", "125.00", "4.00",
                     "0.12", "0.50", "2.00"],
                    ["produce", "confluent", "produce()", "1,000", "0.1", "1000.00", "1.00",
                     "1.00", "1.00", "0.50"]]
    assert out.startswith("intro\n<!-- bench: produce broker=Tansu records=1000 -->\n```")
    assert out.endswith("<!-- /bench -->\nend\n") and "old" not in out
    assert "1,000 records of 100 bytes" in out and "median of 3" in out
    assert bench_report.update(out, tmp_path) == out
    # nodes=N tells one Apache Kafka from three
    store.append(tmp_path, _run("Apache Kafka 4.3.1 (3 nodes)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.2, 0.1)]))
    store.append(tmp_path, _run("Apache Kafka 4.3.1 (1 node)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.5, 0.1)]))
    three = bench_report.update("<!-- bench: produce broker=Apache nodes=3 -->\n<!-- /bench -->",
                                tmp_path)
    assert "5,000" in three and "(3 nodes)" in three and "2,000" not in three
    # a run made in processes holding objects of their own shows only where asked for
    held = _run("Tansu (embedded)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.5, 0.25),
        _row("confluent", "produce()", 1000, 1.0, 1.0),
        _row("kafka_fast", "produce() +1M held", 1000, 1.0, 0.5),
        _row("confluent", "produce() +1M held", 1000, 2.0, 4.0)])
    held["settings"]["hold_objects"] = "0,1000000"
    store.append(tmp_path, held)
    assert bench_report.update(text, tmp_path) == out
    shown = bench_report.update(
        "<!-- bench: produce broker=Tansu hold_objects=0,1000000 -->\n<!-- /bench -->",
        tmp_path)
    assert "holding 0 or 1000000 bytes objects" in shown

    def shown_rows(rows: str) -> int:
        text = bench_report.update("<!-- bench: produce broker=Tansu hold_objects=0,1000000 "
                                   f"rows={rows} -->\n<!-- /bench -->", tmp_path)
        return sum(line.startswith("produce ") for line in text.split("```")[1].splitlines())

    assert (shown_rows("produce()"), shown_rows("produce_batch,send()")) == (4, 0)
    rows = [line.split() for line in shown.split("```")[1].splitlines()
            if line.startswith("produce ")]
    # held rows compare with confluent's held row: half its CPU per record, twice its rate
    assert [r[-4:-2] for r in rows] == [["2.00", "0.25"], ["1.00", "1.00"], ["2.00", "0.12"],
                                        ["1.00", "1.00"]]
    # cases=A,B: only runs that included those cases (a later partial run does not replace
    # the full matrix)
    full = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.1, 0.1)])
    full["settings"]["cases"] = ["kafka_fast.produce", "java.producer_perf"]
    partial = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 1.0, 1.0)])
    partial["settings"]["cases"] = ["kafka_fast.produce"]
    store.append(tmp_path, full)
    store.append(tmp_path, partial)
    picked = bench_report.update("<!-- bench: produce broker=Tansu records=1000 "
                                 "cases=java.producer_perf,kafka_fast.produce -->\n"
                                 "<!-- /bench -->", tmp_path)
    [row] = [line.split() for line in picked.split("```")[1].splitlines()
             if line.startswith("produce ")]
    assert row[3] == "10,000"
    with pytest.raises(ValueError, match="no stored produce run matches {'broker': 'Redpanda'}"):
        bench_report.update("<!-- bench: produce broker=Redpanda -->\n<!-- /bench -->", tmp_path)


def test_docs_tables_are_the_stored_results():
    """README/docs blocks and docs/bench/settings.md are what the generator makes now."""
    assert bench_report.main(["--check"]) == 0


def test_java_perf_tools_write_and_read_the_records(apache_kafka):
    """The anchors really move the records: ProducerPerformance's records are on the broker
    (exact high watermarks) and ConsumerPerformance reads all of them."""
    from confluent_kafka import Consumer, TopicPartition

    if java.missing():
        pytest.fail(f"the Java anchors need {java.missing()}")
    topic = unique_topic("java-perf")
    create_topic(apache_kafka, topic, 2)
    payload = Payload.make(3000, 50, 0)
    wall, cpu, error = java.producer_performance(apache_kafka.bootstrap, topic, payload, "lz4",
                                                 "all", 120)
    assert error == "" and wall > 0 and cpu > 0
    reader = Consumer(apache_kafka.client_config({"group.id": "java-perf-check"}))
    try:
        marks = [reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                 for p in range(2)]
    finally:
        reader.close()
    assert sum(high - low for low, high in marks) == 3000, marks
    wall, cpu, error = java.consumer_performance(apache_kafka.bootstrap, topic, payload, 120)
    assert error == "" and wall > 0 and cpu > 0
    with pytest.raises(RuntimeError, match="ConsumerPerformance"):
        java.consumer_performance(apache_kafka.bootstrap, topic, Payload.make(3001, 50, 0), 5)
    assert json.loads(json.dumps(store.machine()))["cpus"] >= 1


def test_held_objects_are_distinct_bytes_of_the_size_asked():
    held = hold_objects(1000, size=100)
    assert len(held) == 1000 and {len(b) for b in held} == {100}
    assert len(set(held)) == 1000 and held[7] == ((7).to_bytes(8, "little") * 13)[:100]


def test_a_scaling_block_shows_the_newest_run_of_every_point(tmp_path):
    def point(value: int, wall: float) -> dict:
        run = _run("Tansu (embedded)", 1000, [
            _row("kafka_fast", "produce()", 1000, wall, 0.25),
            _row("confluent", "produce()", 1000, 1.0, 1.0)])
        run["settings"].update(sweep="partitions", value=value)
        return run

    for value, wall in ((1000, 2.0), (1, 0.5), (1000, 0.25)):
        store.append(tmp_path, {**point(value, wall), "bench": "scaling"})
    path = store.append(tmp_path, {**point(10, 1.0), "bench": "scaling"})
    assert path == tmp_path / "scaling.jsonl"
    out = bench_report.update(
        "<!-- bench: scaling sweep=partitions broker=Tansu -->\n<!-- /bench -->", tmp_path)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| 1")]
    # points in order; for 1,000 partitions the newer run (4,000 records/s), not the older
    assert [(r[0], r[1], r[3], r[6]) for r in rows] == [
        ("1", "kafka_fast produce()", "2,000", "0.25"), ("1", "confluent produce()", "1,000", "1.00"),
        ("10", "kafka_fast produce()", "1,000", "0.25"), ("10", "confluent produce()", "1,000", "1.00"),
        ("1,000", "kafka_fast produce()", "4,000", "0.25"),
        ("1,000", "confluent produce()", "1,000", "1.00")]
    assert "| partitions | client / path |" in out
    with pytest.raises(ValueError, match="sweep= one of"):
        bench_report.update("<!-- bench: scaling broker=Tansu -->\n<!-- /bench -->", tmp_path)


def test_a_threads_block_compares_each_path_with_its_one_thread_rate(tmp_path):
    def point(threads: int, wall: float, cpu: float) -> dict:
        run = _run("Apache Kafka 4.4.0 (1 node)", 1000, [
            _row("kafka_fast", "produce_batch, N threads, one producer", 1000, wall, cpu),
            _row("kafka_fast", "produce(), N threads, one producer", 1000, 2 * wall, cpu)])
        run["settings"].update(sweep="threads", value=threads)
        run["machine"]["cpus"] = 2
        return {**run, "bench": "scaling"}

    store.append(tmp_path, point(1, 0.5, 0.25))
    store.append(tmp_path, point(2, 0.25, 0.5))
    out = bench_report.update(
        "<!-- bench: scaling sweep=threads broker=Apache -->\n<!-- /bench -->", tmp_path)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| 1 ") or line.startswith("| 2 ")]
    # records/s, x its own one-thread rate, and the rate with both CPUs busy at the run's
    # client + broker CPU per record (broker 0.5 s in every row): 2 * 1000 / (cpu + 0.5)
    assert [(r[0], r[1].split(",")[0], r[2], r[3], r[7], r[8]) for r in rows] == [
        ("1", "produce_batch", "2,000", "1.00", "2,667", "1.33"),
        ("1", "produce()", "1,000", "1.00", "2,667", "2.67"),
        ("2", "produce_batch", "4,000", "2.00", "2,000", "1.00"),
        ("2", "produce()", "2,000", "2.00", "2,000", "2.00")]
    assert "2 CPUs divided by the client's and the broker's CPU seconds per record" in out


def test_asyncio_producers_compare_with_confluents_aio_producer():
    from kafka_fast.bench.result import Result
    from kafka_fast.bench.runner import ratios

    def result(client: str, path: str, wall: float, cpu: float) -> Result:
        return Result(client, path, "produce", 1000, 110_000, wall, cpu)

    results = [result("confluent", "produce()", 0.5, 1.0),
               result("confluent", "AIOProducer.produce()", 2.0, 8.0),
               result("kafka_fast", "AIOProducer.produce()", 1.0, 2.0),
               result("aiokafka", "send()", 4.0, 16.0),
               result("kafka_fast", "produce()", 0.25, 0.5),
               result("asyncio", "futures only, no client", 0.5, 1.0)]
    got = {results[i].label: v for i, v in ratios(results).items()}
    assert got["kafka_fast AIOProducer.produce()"] == (2.0, 0.25)
    assert got["aiokafka send()"] == (0.5, 2.0)
    assert got["kafka_fast produce()"] == (2.0, 0.5)  # the synchronous baseline
    assert got["asyncio futures only, no client"] == (4.0, 0.125)
    # without confluent's AIOProducer in the run, the synchronous produce() is the baseline
    assert ratios([results[0], results[2]])[1] == (0.5, 2.0)


def test_uvloop_rows_compare_with_confluents_aio_producer_on_uvloop():
    from kafka_fast.bench.result import Result
    from kafka_fast.bench.runner import ratios

    def result(client: str, path: str, cpu: float) -> Result:
        return Result(client, path, "produce", 1000, 110_000, 1.0, cpu)

    results = [result("confluent", "AIOProducer.produce() [none]", 8.0),
               result("confluent", "AIOProducer.produce() on uvloop [none]", 4.0),
               result("kafka_fast", "AIOProducer.produce() on uvloop [none]", 1.0),
               result("kafka_fast", "AIOProducer.produce() [none]", 2.0),
               result("asyncio", "futures only, no client on uvloop [none]", 0.5)]
    got = {results[i].label: v[1] for i, v in ratios(results).items()}
    assert got["kafka_fast AIOProducer.produce() on uvloop [none]"] == 0.25
    assert got["kafka_fast AIOProducer.produce() [none]"] == 0.25
    assert got["asyncio futures only, no client on uvloop [none]"] == 0.125


@pytest.mark.parametrize("case", ["asyncio.futures", "asyncio.futures_uvloop"])
def test_the_asyncio_floor_resolves_every_future(case):
    from kafka_fast.bench.clients import CASE, Target

    wall, cpu, error = CASE[case].run(
        Target("unused:9092", "unused", 1, "none", "1", 30.0), Payload.make(2_000, 20, 4))
    assert (error, wall > 0, cpu > 0) == ("", True, True)


def test_goals_are_checked_against_the_runs_and_the_floor(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_report, "GOAL_RUNS", (
        ("produce", "broker=Tansu"), ("produce", "broker=Apache acks=1"),
        ("consume", "broker=Tansu")))

    def consume(client: str, path: str, wall: float, cpu: float) -> dict:
        return dict(_row(client, path, 1_000_000, wall, cpu), direction="consume")

    store.append(tmp_path, _run("Tansu (embedded)", 1_000_000, [
        _row("kafka_fast", "produce_batch", 1_000_000, 0.5, 0.12),
        _row("kafka_fast", "produce()", 1_000_000, 0.5, 0.30),
        _row("confluent", "produce()", 1_000_000, 1.0, 1.50)]))
    store.append(tmp_path, _run("Apache Kafka 4.4.0 (1 node)", 1_000_000, [
        _row("kafka_fast", "produce_batch", 1_000_000, 0.2, 0.07),
        _row("kafka_fast", "produce_batch [lz4]", 1_000_000, 0.2, 0.2),
        _row("confluent", "produce()", 1_000_000, 1.0, 1.50)]))
    store.append(tmp_path, {**_run("Tansu (embedded)", 1_000_000, [
        consume("kafka_fast", "poll()", 0.5, 0.6), consume("kafka_fast", "consume(10000)", 0.5, 0.3),
        consume("confluent", "poll()", 1.0, 2.0), consume("confluent", "consume(10000)", 1.0, 1.0)]),
        "bench": "consume"})
    store.append(tmp_path, store.record("floor", "none", {"records": 1_000_000}, [
        {"direction": "produce", "step": "CRC32C", "cpu_s_per_million": 0.01},
        {"direction": "produce", "step": "floor (sum)", "cpu_s_per_million": 0.05},
        {"direction": "produce", "step": "compress (lz4)", "codec": "lz4",
         "cpu_s_per_million": 0.15}]))
    out = bench_report.update("<!-- bench: goals -->\n<!-- /bench -->", tmp_path)
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines()
            if line.startswith(("| produce", "| consume", "| poll"))]
    assert rows == [
        ["produce_batch", "Tansu (embedded)", "2,000,000", "0.12", "", "2.40",
         "<= 1.5x floor", "**no**"],
        ["produce()", "Tansu (embedded)", "2,000,000", "0.30", "0.20", "6.00",
         "<= 0.15x confluent produce()", "**no**"],
        # the rate goal only on one Apache Kafka node at acks=1
        ["produce_batch", "Apache Kafka 4.4.0 (1 node), acks=1", "5,000,000", "0.07", "",
         "1.40", "<= 1.5x floor, >= 4M records/s", "yes, yes"],
        # lz4 against the floor plus lz4's own compression of the records: 0.2 / 0.2
        ["produce_batch [lz4]", "Apache Kafka 4.4.0 (1 node), acks=1", "5,000,000", "0.20", "",
         "1.00", "<= 1.3x (floor + lz4)", "yes"],
        # poll() against confluent's poll(), consume(10000) against its consume(10000); no floor
        ["consume(10000)", "Tansu (embedded)", "2,000,000", "0.30", "0.30", "",
         "<= 0.20x confluent consume(10000)", "**no**"],
        ["poll()", "Tansu (embedded)", "2,000,000", "0.60", "0.30", "",
         "<= 0.33x confluent poll()", "yes"]]
    assert "produce 0.050, consume 0.000, produce + lz4 0.200 CPU s/M" in out
    assert out.count(", floor 1;") + out.count(", floor 1.") == 3  # every run's floor named
    assert "median of 3" in out


def test_each_run_is_held_against_the_floor_of_its_own_machine_nearest_in_time():
    """A machine of another day runs at another speed: each run's floor is the one measured
    on the same machine (CPU model and kernel build), closest in time, from a clean tree."""
    def floor(time: str, machine: str, commit: str = "abc") -> dict:
        return {"time": time, "machine": {"kernel": machine}, "results": [], "commit": commit}

    a_day1, a_day2 = floor("2026-11-27T10:00:00+00:00", "a"), floor("2026-11-28T10:00:00+00:00", "a")
    b_day3 = floor("2026-11-29T10:00:00+00:00", "b")
    runs = [a_day1, a_day2, b_day3]

    def run(time: str, machine: str) -> dict:
        return {"time": time, "machine": {"kernel": machine}}

    assert bench_report.nearest_floor(runs, run("2026-11-27T20:00:00+00:00", "a")) is a_day1
    assert bench_report.nearest_floor(runs, run("2026-11-28T02:00:00+00:00", "a")) is a_day2
    # the newest floor is of another machine: the same machine's older floor is used
    assert bench_report.nearest_floor(runs, run("2026-11-29T11:00:00+00:00", "a")) is a_day2
    # no floor of the run's machine: the nearest of any
    assert bench_report.nearest_floor(runs, run("2026-11-29T11:00:00+00:00", "c")) is b_day3
    assert bench_report.nearest_floor([], run("2026-11-29T11:00:00+00:00", "c")) is None
    # a floor of a dirty tree only when there is no clean one
    dirty = floor("2026-11-28T19:00:00+00:00", "a", "abc-dirty")
    assert bench_report.nearest_floor([*runs, dirty],
                                      run("2026-11-28T20:00:00+00:00", "a")) is a_day2
    assert bench_report.nearest_floor([dirty], run("2026-11-28T20:00:00+00:00", "a")) is dirty


def test_the_floor_is_the_sum_of_its_measured_steps(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_floor",
                                                  ROOT / "benchmarks" / "bench_floor.py")
    bench_floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_floor)
    assert bench_floor.main(["-n", "20000", "--repeat", "1", "--codecs", "lz4",
                             "--results", str(tmp_path)]) == 0
    (run,) = store.load(tmp_path / "floor.jsonl")
    assert run["settings"] == {"records": 20000, "value_bytes": 100, "key_bytes": 10,
                               "repeat": 1, "codecs": ["lz4"]}
    codec_rows = [(r["direction"], r["step"], r["codec"]) for r in run["results"]
                  if "codec" in r]
    assert codec_rows == [("produce", "compress the batches' records (lz4)", "lz4"),
                          ("consume", "decompress the batches' records (lz4)", "lz4")]
    for direction, steps in (("produce", 4), ("consume", 3)):
        rows = [r for r in run["results"] if r["direction"] == direction and "codec" not in r]
        assert len(rows) == steps + 1 and rows[-1]["step"] == "floor (sum)"
        assert all(r["cpu_s_per_million"] >= 0 for r in rows)
        assert rows[-1]["cpu_s_per_million"] == pytest.approx(
            sum(r["cpu_s_per_million"] for r in rows[:-1]))


def test_clean_median_filter_skips_dirty_trees_and_single_runs(tmp_path):
    good = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.5, 0.25)])
    good["commit"] = "0123456789ab"
    dirty = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.2, 0.1)])
    dirty["commit"] = "0123456789ab-dirty"
    single = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.1, 0.1)])
    single["commit"], single["settings"]["repeat"] = "0123456789ab", 1
    for run in (good, dirty, single):
        store.append(tmp_path, run)
    runs = store.load(tmp_path / "produce.jsonl")
    assert bench_report.newest(runs, {"clean_median_of": "3"}) == good
    assert bench_report.newest(runs, {}) == single
    assert bench_report.newest(runs, {"clean_median_of": "4"}) is None


def test_a_block_takes_the_first_alternative_some_run_matches(tmp_path):
    old = _run("Tansu (embedded)", 1000, [_row("kafka_fast", "produce()", 1000, 0.5, 0.25)])
    store.append(tmp_path, old)
    text = ("<!-- bench: produce broker=Tansu suite=tables clean_median_of=3 || broker=Tansu "
            "records=1000 -->\n<!-- /bench -->\n")
    assert "2,000" in bench_report.update(text, tmp_path)  # no suite run yet: the older one
    quiet = _run("Tansu (embedded)", 300, [_row("kafka_fast", "produce()", 300, 0.1, 0.05)])
    quiet["commit"], quiet["settings"]["suite"] = "0123456789ab", "tables"
    store.append(tmp_path, quiet)
    store.append(tmp_path, _run("Tansu (embedded)", 1000, [
        _row("kafka_fast", "produce()", 1000, 0.25, 0.25)]))  # newer, not of the suite
    shown = bench_report.update(text, tmp_path)
    assert "3,000" in shown and "300 records of 100 bytes" in shown
    with pytest.raises(ValueError, match="one filter set"):
        bench_report.update("<!-- bench: goals || x=1 -->\n<!-- /bench -->", tmp_path)


def test_a_run_is_dirty_only_when_something_besides_docs_changed(tmp_path):
    """Results and the pages drawn from them do not make a run's tree dirty; code does."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs" / "bench" / "results").mkdir(parents=True)
    files = ["README.md", "docs/benchmarks.md", "docs/bench/results/produce.jsonl", "mod.py",
             "pkg/notes.md"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    head = store.commit(tmp_path)
    assert len(head) == 12 and not head.endswith("-dirty")
    for name in files[:3]:
        (tmp_path / name).write_text("b\n")
    assert store.commit(tmp_path) == head
    (tmp_path / "pkg/notes.md").write_text("b\n")
    assert store.commit(tmp_path) == head + "-dirty"
    git("checkout", "pkg/notes.md")
    (tmp_path / "mod.py").write_text("b\n")
    assert store.commit(tmp_path) == head + "-dirty"
