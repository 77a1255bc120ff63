"""Pooled A/B figures: the rounds of every stored A/B run against one BASE, read as pairs.

Each round of ``benchmarks/bench_ab.py`` runs BASE and HEAD back to back, so the ratio
HEAD/BASE of one round is measured under the same machine conditions; pooling the rounds of
several runs gives the median ratio per case and a distribution-free 95% interval for it (the
order statistics of the binomial sign test: no assumption about how the figures spread). A/A
runs (BASE and HEAD the same commit) show how far identical builds differ: the noise.
"""

from __future__ import annotations

import statistics
from math import comb
from typing import Any

#: (figure, HEAD/BASE better when lower)
FIGURES = (("cpu_s_per_million", True), ("records_per_s", False))


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A ``level`` confidence interval of the median of ``values`` from their order
    statistics (the sign test's), or None when there are too few values for one."""
    xs = sorted(values)
    n = len(xs)
    tail = (1 - level) / 2
    k = 0  # the largest k with P(Binomial(n, 1/2) < k) <= tail
    while k < n and sum(comb(n, i) for i in range(k + 1)) / 2 ** n <= tail:
        k += 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]


def is_same(run: dict[str, Any]) -> bool:
    """True for an A/A run: BASE and HEAD are one commit."""
    return str(run["head"]["commit"]).startswith(str(run["base"]["commit"]))


def selected(runs: list[dict[str, Any]], base: str | None) -> list[dict[str, Any]]:
    """The quiet runs against ``base`` (a commit prefix), or the quiet A/A runs (None)."""
    return [r for r in runs if not r.get("loaded")
            and (is_same(r) if base is None else
                 not is_same(r) and str(r["base"]["commit"]).startswith(base))]


def pooled(runs: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Case -> figure -> the HEAD/BASE ratio of every round of ``runs``."""
    out: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for rnd in run["rounds"]:
            for case, base in rnd["base"].items():
                head = rnd["head"].get(case)
                if head is None:
                    continue
                for figure, _ in FIGURES:
                    if base[figure]:
                        out.setdefault(case, {}).setdefault(figure, []).append(
                            head[figure] / base[figure])
    return out


def render(runs: list[dict[str, Any]], base: str | None) -> str:
    """The Markdown table of the pooled rounds against ``base`` (None: the A/A runs)."""
    chosen = selected(runs, base)
    if not chosen:
        raise ValueError(f"no quiet A/B run {'A/A' if base is None else 'against ' + base} "
                         "is stored")
    lines = ["| case | rounds | x CPU median | x CPU 95% interval | x rate median "
             "| x rate 95% interval |", "|---|---:|---:|---|---:|---|"]
    for case, figures in pooled(chosen).items():
        cells = [case, str(len(figures["cpu_s_per_million"]))]
        for figure, _ in FIGURES:
            values = figures[figure]
            interval = median_interval(values)
            cells += [f"{statistics.median(values):.3f}",
                      "-" if interval is None else f"{interval[0]:.3f} - {interval[1]:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    heads = sorted({str(r["head"]["commit"])[:12] for r in chosen})
    what = "A/A (BASE = HEAD)" if base is None else f"BASE `{base}`"
    lines += ["", f"{what}: {len(chosen)} quiet run(s), HEAD "
              + ", ".join(f"`{h}`" for h in heads) + f", {chosen[0]['broker']}, "
              f"{chosen[0]['settings']['records']:,} records per case; x: HEAD/BASE per round "
              "(CPU: lower is better, rate: higher), median over the pooled rounds with its "
              "distribution-free 95% interval."]
    return "\n".join(lines) + "\n"
