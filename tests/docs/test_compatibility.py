"""docs/compatibility.md's broker table is the one tools/broker_matrix.py generates from the
stored matrix outcomes, the stored run is complete, and the tool refuses runs that are not
(a failed cell, a missing one, a pass that compared nothing)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from harness.apache_kafka import matrix_versions
from matrix import FAILED, FEATURES, PASSED, UNSUPPORTED, read_results, supported, write_result

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("broker_matrix",
                                               ROOT / "tools" / "broker_matrix.py")
assert _spec is not None and _spec.loader is not None
tool = importlib.util.module_from_spec(_spec)
sys.modules["broker_matrix"] = tool
_spec.loader.exec_module(tool)

STORED = json.loads(tool.STORED.read_text())


def _complete_run(directory: Path) -> None:
    for f in FEATURES:
        for v in matrix_versions():
            ok = supported(f.id, v)
            write_result(directory, f.id, v, PASSED if ok else UNSUPPORTED,
                         records=3 if ok else 0, offsets=0, test="t")


def test_the_docs_table_is_generated_from_the_stored_run():
    doc = tool.DOC.read_text()
    block = doc.split(tool.BEGIN, 1)[1].split(tool.END, 1)[0]
    assert block.strip() == tool.render(STORED)


def test_the_stored_run_covers_the_matrix_and_passed():
    assert STORED["versions"] == matrix_versions()
    cells = {(c["feature"], c["version"]): c for c in STORED["cells"]}
    assert tool.problems(cells, matrix_versions()) == []
    assert len(cells) == len(FEATURES) * len(matrix_versions())
    row = next(r for r in tool.render(STORED).splitlines() if "KIP-848" in r)
    assert row.strip("| ").split(" | ")[1:] == [
        "tested" if supported("group-consumer", v)
        else "not supported by that broker: KIP-848 is early access in 3.9, off by default"
        for v in matrix_versions()]


def test_a_complete_run_is_stored_and_checked(tmp_path):
    _complete_run(tmp_path / "results")
    doc = tmp_path / "compatibility.md"
    doc.write_text(f"head\n{tool.BEGIN}\nold\n{tool.END}\ntail\n")
    stored = tmp_path / "compatibility.json"
    args = ["--results", str(tmp_path / "results"), "--stored", str(stored), "--doc", str(doc)]
    assert tool.main(["--store", *args]) == 0
    run = json.loads(stored.read_text())
    assert doc.read_text() == f"head\n{tool.BEGIN}\n{tool.render(run)}\n{tool.END}\ntail\n"
    assert tool.main(["--check", *args]) == 0


@pytest.mark.parametrize("damage", ["failed", "missing", "compared-nothing", "wrong-kind"])
def test_an_incomplete_or_failing_run_is_refused(tmp_path, capsys, damage):
    results = tmp_path / "results"
    _complete_run(results)
    version = matrix_versions()[-1]
    if damage == "failed":
        write_result(results, "transactions", version, FAILED, records=0, offsets=0,
                     test="t", detail="boom")
        want = f"transactions on Kafka {version}: failed, expected passed (boom)"
    elif damage == "missing":
        (results / f"admin@{version}.json").unlink()
        want = f"admin on Kafka {version}: no outcome (the test did not run)"
    elif damage == "compared-nothing":
        write_result(results, "consume", version, PASSED, records=0, offsets=0, test="t")
        want = f"consume on Kafka {version}: passed without exact records or offsets"
    else:
        old = matrix_versions()[0]
        write_result(results, "group-consumer", old, PASSED, records=1, offsets=0, test="t")
        want = f"group-consumer on Kafka {old}: passed, expected unsupported"
    with pytest.raises(tool.MatrixError, match="incomplete or failing") as info:
        tool.stored_run(read_results(results), matrix_versions())
    assert want in str(info.value)
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps(STORED))
    assert tool.main(["--check", "--results", str(results), "--stored", str(stored),
                      "--doc", str(tmp_path / "unused.md")]) == 1
    assert want in capsys.readouterr().err


def test_a_run_disagreeing_with_the_stored_table_fails_the_check(tmp_path):
    _complete_run(tmp_path)
    cells = read_results(tmp_path)
    flipped = dict(STORED, cells=[dict(c, outcome=UNSUPPORTED) if c["feature"] == "admin"
                                  else c for c in STORED["cells"]])
    bad = tool.check(cells, flipped, matrix_versions())
    assert bad == [f"admin on Kafka {v}: stored unsupported, this run passed"
                   for v in sorted(matrix_versions())]


def test_no_outcomes_fail_the_check_only_under_ci(tmp_path, monkeypatch, capsys):
    args = ["--check", "--results", str(tmp_path / "none")]
    monkeypatch.delenv("CI", raising=False)
    assert tool.main(args) == 0
    assert "the matrix tests did not run" in capsys.readouterr().out
    monkeypatch.setenv("CI", "true")
    assert tool.main(args) == 1


def test_a_release_whose_jars_are_missing_is_left_unchecked_outside_ci(tmp_path, monkeypatch,
                                                                       capsys):
    oldest, *others = matrix_versions()
    cache = tmp_path / "cache"
    for version in others:
        (cache / f"kafka-{version}" / "libs").mkdir(parents=True)
        (cache / f"kafka-{version}" / "libs" / ".complete").touch()
    monkeypatch.setenv("KAFKA_FAST_CACHE", str(cache))
    results = tmp_path / "results"
    _complete_run(results)
    for path in results.glob(f"*@{oldest}.json"):
        path.unlink()
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps(STORED))
    args = ["--check", "--results", str(results), "--stored", str(stored)]
    monkeypatch.delenv("CI", raising=False)
    assert tool.main(args) == 0
    assert f"Kafka {oldest} not available here" in capsys.readouterr().out
    monkeypatch.setenv("CI", "true")
    assert tool.main(args) == 1
    assert f"admin on Kafka {oldest}: no outcome" in capsys.readouterr().err
