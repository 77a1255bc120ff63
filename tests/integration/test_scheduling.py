"""The groups ``make test`` schedules by (tests/harness/scheduling.py): files sharing a
JVM-backed session fixture are one group, transitively; the wheel tests are one group each;
every other file is its own group."""

from __future__ import annotations

from dataclasses import dataclass

from harness.scheduling import SPLIT, groups


@dataclass
class _Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()


def test_files_sharing_a_jvm_fixture_are_one_group_and_wheel_tests_one_each():
    wheels = SPLIT[0]
    items = [
        _Item("tests/a/test_one.py::test_x", ("kafka", "apache_cluster_session")),
        _Item("tests/a/test_one.py::test_y", ("kafka",)),
        _Item("tests/b/test_two.py::test_z", ("apache_cluster_session", "spark")),
        _Item("tests/c/test_three.py::test_w", ("spark",)),
        _Item("tests/d/test_four.py::test_v", ("kafka", "tansu")),
        _Item("tests/d/test_five.py::test_u", ("apache_share_kafka",)),
        _Item(f"{wheels}::test_w[3.10]", ("kafka",)),
        _Item(f"{wheels}::test_w[3.11]", ("kafka",)),
    ]
    assert groups(items) == {  # type: ignore[arg-type]
        "tests/a/test_one.py": "apache_cluster_session+spark",
        "tests/b/test_two.py": "apache_cluster_session+spark",
        "tests/c/test_three.py": "apache_cluster_session+spark",
        "tests/d/test_four.py": "tests/d/test_four.py",
        "tests/d/test_five.py": "apache_share_kafka",
        f"{wheels}::test_w[3.10]": f"{wheels}::test_w[3.10]",
        f"{wheels}::test_w[3.11]": f"{wheels}::test_w[3.11]",
    }


def test_the_timeline_records_each_phase_with_the_machines_cpu_and_is_summarised(
        tmp_path, monkeypatch):
    import importlib.util
    import json
    import time
    from pathlib import Path
    from types import SimpleNamespace

    from harness import scheduling

    path = tmp_path / "timeline.jsonl"
    monkeypatch.setenv(scheduling.TIMELINE_ENV, str(path))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    for i, test in enumerate(("tests/a/test_one.py::test_x", "tests/b/test_two.py::test_y")):
        t0 = time.time()
        sum(range(2_000_000))  # some CPU between the two readings
        scheduling.pytest_runtest_logreport(SimpleNamespace(  # type: ignore[arg-type]
            nodeid=test, when="call", start=t0 - 1, stop=t0 + i, outcome="passed"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["test"], r["worker"], r["phase"], r["outcome"]) for r in rows] == [
        ("tests/a/test_one.py::test_x", "main", "call", "passed"),
        ("tests/b/test_two.py::test_y", "main", "call", "passed")]
    assert 0 < rows[0]["cpu_busy"] < rows[0]["cpu_total"]
    assert rows[0]["cpu_busy"] <= rows[1]["cpu_busy"] and rows[0]["cpu_total"] < rows[1]["cpu_total"]

    tool = Path(__file__).resolve().parents[2] / "tools" / "test_timeline.py"
    spec = importlib.util.spec_from_file_location("test_timeline", tool)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = module.summary(rows, 2)
    assert lines[0] == f"span {(rows[1]['stop'] - rows[0]['start']) / 60:.1f} min, 2 tests"
    assert lines[1].startswith("  main: busy ")
    assert lines[2].startswith("machine CPUs busy ") and lines[2].split()[3].endswith("%")
    assert lines[3:] == ["files by time spent in their tests (top 2):",
                         "        2 s  tests/b/test_two.py", "        1 s  tests/a/test_one.py"]
