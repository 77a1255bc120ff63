"""The A/B runner (benchmarks/bench_ab.py): the order of the sides, its medians and HEAD/BASE
table, and the refusal of a BASE that is not a commit. (Figures are measured by the runner, never asserted here.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import bench_ab
from benchmarks.bench_ab import ROOT


def _figures(rate: float, cpu: float) -> dict:
    return {"records_per_s": rate, "cpu_s_per_million": cpu}


def test_the_sides_take_turns_going_first():
    assert [bench_ab.order(n) for n in range(3)] == [
        ["base", "head"], ["head", "base"], ["base", "head"]]


def test_medians_over_rounds_and_the_ratio_table():
    rounds = [{"base": {"produce produce() [none]": _figures(100, 0.4)},
               "head": {"produce produce() [none]": _figures(110, 0.3)}},
              {"base": {"produce produce() [none]": _figures(300, 0.2)},
               "head": {"produce produce() [none]": _figures(90, 0.5)}},
              {"base": {"produce produce() [none]": _figures(200, 0.3)},
               "head": {"produce produce() [none]": _figures(100, 0.6)}}]
    base, head = bench_ab.medians(rounds, "base"), bench_ab.medians(rounds, "head")
    assert base == {"produce produce() [none]": _figures(200, 0.3)}
    assert head == {"produce produce() [none]": _figures(100, 0.5)}
    row = bench_ab.table(base, head).splitlines()[2].split()
    assert row == ["produce", "produce()", "[none]", "200", "100", "0.500", "0.300", "0.500",
                   "1.667"]


def test_a_base_that_is_not_a_commit_is_refused_in_one_line():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_ab.py"), "--base",
                           "no-such-commit-here", "--no-store"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "bench_ab.py: error: --base: 'no-such-commit-here' is not a commit of this repository")


def test_the_median_interval_is_the_sign_tests_order_statistics():
    from kafka_fast.bench.paired import median_interval

    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # 2/32 > 5%: too few
    assert median_interval([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == (1.0, 6.0)
    values = [float(v) for v in range(15, 0, -1)]
    assert median_interval(values) == (4.0, 12.0)  # P(X <= 3) = 576/32768 for n = 15


def _run(base: str, head: str, rounds: list[tuple[float, float]], loaded: bool = False) -> dict:
    return {"base": {"commit": base}, "head": {"commit": head}, "loaded": loaded,
            "broker": "Tansu (embedded)", "settings": {"records": 1000},
            "rounds": [{"base": {"c": _figures(100, b)}, "head": {"c": _figures(50, h)}}
                       for b, h in rounds]}


def test_pooled_rounds_take_quiet_runs_against_the_base_and_a_a_runs_apart():
    from kafka_fast.bench import paired

    runs = [_run("aaaa", "bbbb", [(0.25, 0.375), (0.5, 0.25)]),
            _run("aaaa", "cccc", [(0.1, 0.1)]),
            _run("aaaa", "bbbb", [(1.0, 9.0)], loaded=True),
            _run("dddd", "dddd", [(0.5, 0.25)]),
            _run("eeee", "ffff", [(0.3, 0.3)])]
    assert paired.pooled(paired.selected(runs, "aaaa")) == {
        "c": {"cpu_s_per_million": [1.5, 0.5, 1.0], "records_per_s": [0.5, 0.5, 0.5]}}
    assert paired.pooled(paired.selected(runs, None)) == {
        "c": {"cpu_s_per_million": [0.5], "records_per_s": [0.5]}}
    table = paired.render(runs, "aaaa").splitlines()
    assert table[2] == "| c | 3 | 1.000 | - | 0.500 | - |"
    assert "2 quiet run(s), HEAD `bbbb`, `cccc`" in table[4]
    with pytest.raises(ValueError, match="no quiet A/B run against 9999"):
        paired.render(runs, "9999")
