"""The A/B runner (benchmarks/bench_ab.py): the order of the sides, its medians and HEAD/BASE
table, and the refusal of a BASE that is not a commit. (Figures are measured by the runner, never asserted here.)"""

from __future__ import annotations

import subprocess
import sys

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
