"""Regenerate the benchmark tables in README.md and docs/ from the stored results.

A block in a Markdown file

    <!-- bench: produce broker=Tansu (embedded) records=1000000 -->
    ...generated...
    <!-- /bench -->

is replaced by the table of the newest run in ``docs/bench/results/produce.jsonl`` whose
broker and settings match every ``key=value`` given (``broker`` matches the broker name's
beginning; other keys the run's settings, compared as text), followed by a line naming the
run's commit, date, machine and settings; ``nodes=N`` matches a broker named "... (N nodes)";
runs made with ``--hold`` match only a block naming ``hold_objects=N``; ``cases=A,B`` matches
runs that included the cases A and B; ``clean_median_of=N`` only runs of a clean tree with at
least N repeats per case; ``suite=NAME`` runs stored with ``--suite NAME``; ``rows=A,B`` keeps
only the paths starting with A or B. Filter sets separated by ``||`` are alternatives: the
first that some stored run matches is used (quiet runs of ``benchmarks/bench_tables.py`` first,
older runs until there are some). A
``scaling
sweep=size|partitions|producers`` block shows the newest run of every point of that sweep
(``benchmarks/bench_scaling.py``); a ``sweep dimension=D`` block (``benchmarks/bench_sweep.py``)
the chart ``docs/bench/sweep-D.png`` (``chart=NAME`` names another) and the table of the newest
line of every point of dimension D, a quiet machine's before a loaded one's, and the charts are
redrawn from the same lines whenever the blocks are rewritten; a ``goals`` block checks the goals of :data:`GOALS` on the
newest runs of :data:`GOAL_RUNS` and the floor of ``benchmarks/bench_floor.py``; an
``ab base=COMMIT`` block pools every quiet A/B run against COMMIT (``ab same=yes``: the A/A
runs) into per-case HEAD/BASE medians with their 95% intervals (``kafka_fast.bench.paired``). ``--check`` only reports blocks that differ (exit 1).
``--plot FILE`` also draws the newest produce and consume runs matching ``--plot-filter``.

    python tools/bench_report.py            # rewrite the blocks
    python tools/bench_report.py --check    # what `make test` runs
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_fast.bench import paired, store  # noqa: E402
from kafka_fast.bench.result import Result  # noqa: E402
from kafka_fast.bench.runner import format_table, plot, ratios  # noqa: E402

BLOCK = re.compile(r"(<!-- bench: ([^>]*?) -->\n)(.*?)(<!-- /bench -->)", re.S)
FIELDS = {f.name for f in dataclasses.fields(Result)}


def _matches(run: dict[str, Any], filters: dict[str, str]) -> bool:
    if "hold_objects" in run.get("settings", {}) and "hold_objects" not in filters:
        return False  # runs in a process holding objects of its own are asked for by name
    for key, want in filters.items():
        if key == "acks":
            if want not in run.get("settings", {}).get("acks", []):
                return False
        elif key == "broker":
            if not str(run.get("broker", "")).startswith(want):
                return False
        elif key == "cases":  # the run includes each of these cases (and maybe others)
            if not set(want.split(",")) <= set(run.get("settings", {}).get("cases", [])):
                return False
        elif key == "clean_median_of":  # a clean tree's run with at least this many repeats
            s = run.get("settings", {})
            if not from_clean_tree(run) or int(s.get("repeat", 1)) < int(want):
                return False
        elif key == "nodes":  # the broker's node count, as its name gives it: "(3 nodes)"
            if f"({want} node" not in str(run.get("broker", "")):
                return False
        elif str(run.get("settings", {}).get(key)) != want:
            return False
    return True


def newest(runs: list[dict[str, Any]], filters: dict[str, str]) -> dict[str, Any] | None:
    """The last stored run matching ``filters``."""
    found = [run for run in runs if _matches(run, filters)]
    return found[-1] if found else None


def results_of(run: dict[str, Any], acks: str | None = None) -> list[Result]:
    """The run's results (only those with ``acks`` when given: one run may hold several)."""
    return [Result(**{k: v for k, v in row.items() if k in FIELDS}) for row in run["results"]
            if acks is None or row.get("acks") == acks]


def caption(run: dict[str, Any], acks: str | None = None) -> str:
    s, m = run["settings"], run["machine"]
    if acks is not None:
        s = {**s, "acks": [acks]}
    return (f"Run of {run['time'][:10]} at commit `{run['commit'] or 'unknown'}` on "
            f"{run['broker']}: {s['records']:,} records of {s['value_bytes']} bytes with "
            f"{s['key_bytes']}-byte keys, {s['partitions']} partition(s), acks "
            f"{','.join(s['acks'])}, codecs {','.join(s['codecs'])}, median of "
            f"{s['repeat']}"
            + (f", client processes holding {s['hold_objects'].replace(',', ' or ')} bytes "
               "objects of their own (rows say which)" if s.get("hold_objects") else "")
            + ("; " + ", ".join(f"{name} {count:,}" for name, count in
                                s["case_records"].items()) + " records"
               if s.get("case_records") else "")
            + f"; {m['cpus']} CPUs ({m['cpu']}), Python {m['python']}. "
            "Client settings: docs/bench/settings.md.")


#: what the value of each scaling sweep is
SWEEP_HEADING = {"size": "value bytes", "partitions": "partitions", "producers": "producers",
                 "threads": "threads"}


def render_scaling(runs: list[dict[str, Any]], filters: dict[str, str]) -> str:
    """One table for a whole sweep: the newest stored run of every point of it."""
    sweep = filters.get("sweep")
    if sweep not in SWEEP_HEADING:
        raise ValueError(f"a scaling block names sweep= one of {', '.join(SWEEP_HEADING)}")
    points: dict[int, dict[str, Any]] = {}
    for run in runs:
        if _matches(run, filters):
            points[int(run["settings"]["value"])] = run  # later runs replace earlier ones
    if not points:
        raise ValueError(f"no stored scaling run matches {filters}")
    if sweep == "threads":
        return render_threads(points)
    lines = [f"| {SWEEP_HEADING[sweep]} | client / path | records | records/s | MB/s | "
             "CPU s/M | x CPU | client peak RSS MB |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for value in sorted(points):
        results = results_of(points[value])
        rel = ratios(results)
        for i, r in enumerate(results):
            cpu = f"{rel[i][1]:.2f}" if i in rel else ""
            lines.append(f"| {value:,} | {r.label} | {r.records:,} | {r.records_per_s:,.0f} | "
                         f"{r.mb_per_s:.1f} | {r.cpu_per_million:.2f} | {cpu} | "
                         f"{r.max_rss_mb:.0f} |" + (f" {r.remark} |" if r.remark else ""))
    newest = max(points.values(), key=lambda run: run["time"])
    m, s = newest["machine"], newest["settings"]
    return ("\n".join(lines) + f"\n\nRuns of {min(r['time'] for r in points.values())[:10]} "
            f"to {newest['time'][:10]}, newest at commit `{newest['commit'] or 'unknown'}`, on "
            f"{newest['broker']}: {s['key_bytes']}-byte keys, acks {','.join(s['acks'])}, no "
            f"compression, one fresh process per case; x CPU is CPU per record relative to "
            f"confluent-kafka's produce() at the same point; {m['cpus']} CPUs ({m['cpu']}), "
            f"Python {m['python']}.\n")


def render_threads(points: dict[int, dict[str, Any]]) -> str:
    """Application threads on one producer: each path's rate against its own one-thread
    rate, and the rate the same CPU per record (client and broker together) would give with
    every CPU of the machine busy."""
    lines = ["| threads | path | records/s | x 1 thread | CPU s/M | client cores | broker cores "
             "| records/s with every CPU busy | x 1 thread |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    one = {r.path: r.records_per_s for r in results_of(points[min(points)])}
    for value in sorted(points):
        cpus = points[value]["machine"]["cpus"]
        for r in results_of(points[value]):
            base = one.get(r.path) or 0.0
            busy = cpus * r.records / (r.cpu_s + r.broker_cpu_s) if r.cpu_s > 0 else 0.0
            lines.append(
                f"| {value} | {r.path} | {r.records_per_s:,.0f} | "
                f"{r.records_per_s / base if base else 0:.2f} | {r.cpu_per_million:.2f} | "
                f"{r.client_cores:.2f} | {r.broker_cores:.2f} | {busy:,.0f} | "
                f"{busy / base if base else 0:.2f} |" + (f" {r.remark} |" if r.remark else ""))
    newest = max(points.values(), key=lambda run: run["time"])
    m, s = newest["machine"], newest["settings"]
    return ("\n".join(lines) + f"\n\nRuns of {newest['time'][:10]} at commit "
            f"`{newest['commit'] or 'unknown'}` on {newest['broker']}: {s['records']:,} records "
            f"of {s['value_bytes']} bytes with {s['key_bytes']}-byte keys, {s['partitions']} "
            f"partitions, acks {','.join(s['acks'])}, median of {s['repeat']}, one fresh "
            f"process per case; \"with every CPU busy\" is {m['cpus']} CPUs divided by the "
            f"client's and the broker's CPU seconds per record in that run; {m['cpus']} CPUs "
            f"({m['cpu']}), Python {m['python']}.\n")


class Goal(NamedTuple):
    """A goal of the performance work for one kafka_fast path with ``codec``: at most
    ``most_floor`` times the floor's CPU per record (for a codec, the floor plus the CPU of
    compressing or decompressing the same records with the same library), at most
    ``most_ratio`` times the CPU per record of confluent-kafka's ``baseline`` path (same run,
    same broker), at least ``least_rate`` records/s on one Apache Kafka node at acks=1."""

    direction: str
    path: str
    most_floor: float | None = None
    most_ratio: float | None = None
    baseline: str = ""
    least_rate: float | None = None
    codec: str = "none"


#: The goals (benchmarks, never asserted in tests).
GOALS = (
    Goal("produce", "produce_batch", most_floor=1.5, least_rate=4_000_000),
    Goal("consume", "consume_batch", most_floor=1.5),
    Goal("produce", "produce()", most_ratio=0.15, baseline="produce()"),
    Goal("consume", "consume(10000)", most_ratio=0.20, baseline="consume(10000)"),
    Goal("consume", "poll()", most_ratio=0.33, baseline="poll()"),
    *(Goal(direction, path, most_floor=1.3, codec=codec) for codec in ("lz4", "zstd")
      for direction, path in (("produce", "produce_batch"), ("consume", "consume_batch"))),
)
#: the runs of ``benchmarks/bench_tables.py`` from a clean tree, preferred where there are some
QUIET = "suite=tables clean_median_of=3"
#: The stored runs the goals are checked on: (direction, block filter).
GOAL_RUNS = (
    ("produce", f"broker=Tansu acks=1 {QUIET} || broker=Tansu acks=1 "
                "cases=kafka_fast.produce,kafka_fast.produce_batch"),
    ("produce", f"broker=Apache nodes=1 acks=1 {QUIET} || broker=Apache nodes=1 acks=1"),
    ("produce", f"broker=Apache nodes=1 acks=all {QUIET} || broker=Apache nodes=1 acks=all"),
    ("produce", "broker=Apache nodes=3 acks=all"),
    ("consume", f"broker=Tansu {QUIET} || broker=Tansu"),
    ("consume", f"broker=Apache nodes=1 {QUIET} || broker=Apache nodes=1"),
    ("consume", "broker=Apache nodes=3"),
)


def _goal_rows(goal: Goal, results: list[Result], floor: float | None, where: str,
               one_node_acks1: bool) -> list[str]:
    """The table rows of ``goal`` on one run's ``results`` (the rows of its codec)."""
    rows = []
    codecs = ("", "none") if goal.codec == "none" else (goal.codec,)
    for r in results:
        if r.client != "kafka_fast" or r.direction != goal.direction or r.error:
            continue
        suffix = r.path[len(goal.path):]
        if not r.path.startswith(goal.path) or suffix.strip(" []") not in codecs:
            continue
        cpu = r.cpu_per_million
        base = next((b for b in results if b.client == "confluent" and not b.error
                     and b.direction == goal.direction and b.path == goal.baseline + suffix),
                    None)
        ratio = cpu / base.cpu_per_million if base and base.cpu_per_million else None
        x_floor = cpu / floor if floor else None
        checks = []  # (goal, met)
        if goal.most_floor is not None:
            of = "floor" if goal.codec == "none" else f"(floor + {goal.codec})"
            checks.append((f"<= {goal.most_floor:g}x {of}",
                           None if x_floor is None else x_floor <= goal.most_floor))
        if goal.most_ratio is not None:
            checks.append((f"<= {goal.most_ratio:.2f}x confluent {goal.baseline}",
                           None if ratio is None else ratio <= goal.most_ratio))
        if goal.least_rate is not None and one_node_acks1:
            checks.append((f">= {goal.least_rate / 1e6:g}M records/s",
                           r.records_per_s >= goal.least_rate))
        if not checks:
            continue
        label = goal.path if goal.codec == "none" else f"{goal.path} [{goal.codec}]"
        rows.append(f"| {label} | {where} | {r.records_per_s:,.0f} | {cpu:.2f} | "
                    + (f"{ratio:.2f}" if ratio is not None else "") + " | "
                    + (f"{x_floor:.2f}" if x_floor is not None else "") + " | "
                    + ", ".join(g for g, _ in checks) + " | "
                    + ", ".join("not measured" if ok is None else "yes" if ok else "**no**"
                                for _, ok in checks) + " |")
    return rows


def _floors(floor_run: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(direction, codec) -> the floor's CPU s/M in ``floor_run`` (a codec's: floor plus
    compressing or decompressing)."""
    floors = {(r["direction"], "none"): r["cpu_s_per_million"]
              for r in floor_run["results"] if r["step"] == "floor (sum)"}
    for r in floor_run["results"]:
        base = floors.get((r["direction"], "none"))
        if "codec" in r and base is not None:
            floors[(r["direction"], r["codec"])] = base + r["cpu_s_per_million"]
    return floors


def from_clean_tree(run: dict[str, Any]) -> bool:
    """Whether ``run`` names the commit it measured, with no uncommitted change."""
    commit = str(run.get("commit") or "")
    return bool(commit) and not commit.endswith("-dirty")


def nearest_floor(floor_runs: list[dict[str, Any]], run: dict[str, Any]
                  ) -> dict[str, Any] | None:
    """The floor run measured closest in time to ``run`` on the same machine (CPU model and
    kernel build) if there is one, from a clean tree if there is one: a machine of another
    day may be much faster or slower, and a ratio to the floor is only meaningful between
    measurements of one machine."""
    when = datetime.fromisoformat(run["time"])
    same = [f for f in floor_runs if f.get("machine") == run.get("machine")] or floor_runs
    clean = [f for f in same if from_clean_tree(f)] or same
    return min(clean, default=None,
               key=lambda f: abs((datetime.fromisoformat(f["time"]) - when).total_seconds()))


def render_goals(results_dir: Path) -> str:
    """Each goal against the newest stored run of every broker: met or not, and by how much."""
    floor_path = results_dir / "floor.jsonl"
    floor_runs = store.load(floor_path) if floor_path.exists() else []
    lines = ["| path | broker | records/s | CPU s/M | x confluent CPU | x floor | goal | met |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    captions = []
    used: list[dict[str, Any]] = []
    for direction, spec in GOAL_RUNS:
        runs = store.load(results_dir / f"{direction}.jsonl")
        run, filters = newest_of(runs, alternatives(spec.split()))
        if run is None:
            raise ValueError(f"no stored {direction} run matches {filters}")
        floor_run = nearest_floor(floor_runs, run)
        floors = _floors(floor_run) if floor_run is not None else {}
        if floor_run is not None and floor_run not in used:
            used.append(floor_run)
        s = run["settings"]
        captions.append(f"{direction} on {run['broker']} (acks {filters.get('acks', '-')}): "
                        f"{run['time'][:10]}, commit `{run['commit'] or 'unknown'}`, median of "
                        f"{s.get('repeat', 1)}"
                        + (f", floor {used.index(floor_run) + 1}" if floor_run else ""))
        results = results_of(run, filters.get("acks"))
        where = run["broker"] + (f", acks={filters['acks']}" if "acks" in filters else "")
        one_node_acks1 = "(1 node)" in run["broker"] and filters.get("acks") == "1"
        for goal in GOALS:
            if goal.direction == direction:
                lines += _goal_rows(goal, results, floors.get((direction, goal.codec)),
                                    where, one_node_acks1)
    for number, floor_run in enumerate(used, 1):
        floors = _floors(floor_run)
        extra = "".join(f", {d} + {c} {v:.3f}" for (d, c), v in floors.items() if c != "none")
        captions.append(f"floor {number}: {floor_run['time'][:16].replace('T', ' ')}, commit "
                        f"`{floor_run['commit'] or 'unknown'}` (produce "
                        f"{floors.get(('produce', 'none'), 0):.3f}, consume "
                        f"{floors.get(('consume', 'none'), 0):.3f}{extra} CPU s/M)")
    return ("\n".join(lines) + "\n\nA compressed row's floor is the floor plus the CPU of "
            "compressing (produce) or decompressing (consume) the same records with the same "
            "library and level (`benchmarks/bench_floor.py`), each run's floor the one measured "
            "closest in time to it (the machine's speed differs between days); a codec a run "
            "did not measure has "
            "no row. Runs: " + "; ".join(captions) + ".\n")


#: the table heading of each sweep dimension's value
SWEEP_VALUE = {"partitions": "partitions", "size": "value bytes", "brokers": "nodes",
               "acks": "acks", "codec": "codec", "held": "objects held by the process"}
#: what the worker adds to a path in a process holding objects of its own (" +1M held")
HELD_SUFFIX = re.compile(r" \+[\d.,]+M? held$")


def _sweep_order(dimension: str, value: Any) -> tuple[float, str]:
    """Numbers by size (the base point's 6 partitions between 1 and 10); names (acks, codecs)
    in the sweep's order."""
    from benchmarks.bench_sweep import DIMENSIONS

    if isinstance(value, int | float):
        return (value, "")
    values = DIMENSIONS.get(dimension, ())
    return (values.index(value), "") if value in values else (len(values), str(value))


def sweep_points(runs: list[dict[str, Any]], filters: dict[str, str]
                 ) -> tuple[str, list[tuple[Any, dict[str, Any]]]]:
    """(dimension, [(value, stored line)]) of a ``sweep`` block: for every value of the
    dimension, the newest line from a quiet machine, else the newest from a loaded one, among
    the lines whose other settings are the base's and that match the other filters."""
    rest = {k: v for k, v in filters.items() if k not in ("dimension", "chart")}
    dimension = filters.get("dimension", "")
    if dimension not in SWEEP_VALUE:
        raise ValueError(f"a sweep block names dimension= one of {', '.join(SWEEP_VALUE)}")
    found: dict[Any, list[dict[str, Any]]] = {}
    for run in runs:
        point, base = run["settings"]["point"], run["settings"]["base"]
        if all(point[k] == base[k] for k in point if k != dimension) and _matches(run, rest):
            found.setdefault(point[dimension], []).append(run)
    chosen = []
    for value, lines in found.items():
        quiet = [r for r in lines if r["settings"].get("machine_state") == "quiet"]
        chosen.append((value, max(quiet or lines, key=lambda r: r["time"])))
    return dimension, sorted(chosen, key=lambda vr: _sweep_order(dimension, vr[0]))


def render_sweep(runs: list[dict[str, Any]], filters: dict[str, str]) -> str:
    """The chart link, the table and the caption of a ``sweep`` block."""
    dimension, points = sweep_points(runs, filters)
    if not points:
        return ("No stored sweep line matches yet: `make bench-sweep` runs the sweep "
                "(docs/bench/results/sweep.jsonl).\n")
    chart = filters.get("chart", f"sweep-{dimension}.png")
    lines = [f"![CPU per record, rate and peak memory against {SWEEP_VALUE[dimension]}]"
             f"(bench/{chart})", "",
             f"| {SWEEP_VALUE[dimension]} | direction | client / path | records | records/s | "
             "MB/s | CPU s/M | x CPU | client peak RSS MB |",
             "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for value, run in points:
        results = results_of(run)
        rel = ratios(results)
        shown = f"{value:,}" if isinstance(value, int) else str(value)
        for i, r in enumerate(results):
            cpu = f"{rel[i][1]:.2f}" if i in rel else ""
            lines.append(f"| {shown} | {r.direction} | {r.label} | {r.records:,} | "
                         f"{r.records_per_s:,.0f} | {r.mb_per_s:.1f} | {r.cpu_per_million:.2f}"
                         f" | {cpu} | {r.max_rss_mb:.0f} |"
                         + (f" {r.remark} |" if r.remark else ""))
    runs_shown = [run for _, run in points]
    newest_run = max(runs_shown, key=lambda run: run["time"])
    m, base = newest_run["machine"], newest_run["settings"]["base"]
    loaded = [f"{v}" for v, run in points if run["settings"].get("machine_state") == "loaded"]
    others = ", ".join(f"{k} {v}" for k, v in base.items() if k != dimension)
    return ("\n".join(lines)
            + f"\n\nLines of {min(r['time'] for r in runs_shown)[:10]} to "
            f"{newest_run['time'][:10]}, newest at commit `{newest_run['commit'] or 'unknown'}`,"
            f" on {newest_run['broker']}; everything else as the base point ({others}; "
            f"{newest_run['settings']['key_bytes']}-byte keys), one fresh process per case, "
            f"median of {newest_run['settings']['repeat']}; x CPU is CPU per record relative to "
            "confluent-kafka's produce() / consume(10000) at the same point; "
            f"{m['cpus']} CPUs ({m['cpu']}), Python {m['python']}"
            + (f". **Loaded machine** at {', '.join(loaded)}: other processes used over 15% "
               "of the CPUs" if loaded else "") + ".\n")


#: line colour of each (client, direction) in the sweep charts
SWEEP_COLORS = {("kafka_fast", "produce"): "#d62728", ("kafka_fast", "consume"): "#ff9896",
                ("confluent", "produce"): "#1f77b4", ("confluent", "consume"): "#aec7e8"}


def plot_sweep(dimension: str, points: list[tuple[Any, dict[str, Any]]], path: Path) -> None:
    """Draw CPU per record, records/s and peak RSS against the dimension's values: one line
    per client path, kafka_fast in reds and confluent-kafka in blues (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[tuple[str, str, str], dict[int, Result]] = {}
    for x, (_, run) in enumerate(points):
        for r in results_of(run):
            if not r.error:  # one line per path, held objects or not
                series.setdefault((r.client, r.direction, HELD_SUFFIX.sub("", r.path)),
                                  {})[x] = r
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, get, ylabel, log in (
            (axes[0], lambda r: r.cpu_per_million,
             "client CPU s per million records (lower is better)", True),
            (axes[1], lambda r: r.records_per_s, "records per second (higher is better)", True),
            (axes[2], lambda r: r.max_rss_mb, "client peak RSS, MB", False)):
        for (client, direction, label), by_x in series.items():
            xs = sorted(by_x)
            solid = label.startswith(("produce_batch", "consume_batch"))
            ax.plot(xs, [get(by_x[x]) for x in xs], marker="o",
                    linestyle="-" if solid or client != "kafka_fast" else "--",
                    color=SWEEP_COLORS.get((client, direction), "#9467bd"),
                    label=f"{direction}: {client} {label}")
        ax.set_xticks(range(len(points)), [f"{v:,}" if isinstance(v, int) else str(v)
                                           for v, _ in points])
        ax.set_xlabel(SWEEP_VALUE[dimension])
        ax.set_ylabel(ylabel, fontsize=9)
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)) or 1,
               frameon=False, fontsize=9)
    newest_run = max((run for _, run in points), key=lambda run: run["time"])
    loaded = any(run["settings"].get("machine_state") == "loaded" for _, run in points)
    fig.suptitle(f"{SWEEP_VALUE[dimension]}: kafka_fast and confluent-kafka on "
                 f"{newest_run['broker']}, commit {newest_run['commit'] or 'unknown'}"
                 + (" (loaded machine)" if loaded else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def sweep_charts(texts: list[str], results_dir: Path, out_dir: Path) -> list[Path]:
    """Draw the chart of every ``sweep`` block in ``texts`` that has stored lines."""
    path = results_dir / "sweep.jsonl"
    runs = store.load(path) if path.exists() else []
    drawn = []
    for text in texts:
        for match in BLOCK.finditer(text):
            words = match.group(2).split()
            if words[:1] != ["sweep"]:
                continue
            filters = dict(w.split("=", 1) for w in words[1:])
            dimension, points = sweep_points(runs, filters)
            if points:
                chart = out_dir / filters.get("chart", f"sweep-{dimension}.png")
                plot_sweep(dimension, points, chart)
                drawn.append(chart)
    return drawn


def alternatives(words: list[str]) -> list[dict[str, str]]:
    """The filter sets of a block's ``key=value`` words, ``||`` between alternatives."""
    sets: list[dict[str, str]] = [{}]
    for word in words:
        if word == "||":
            sets.append({})
        else:
            key, _, value = word.partition("=")
            sets[-1][key] = value
    return sets


def newest_of(runs: list[dict[str, Any]], sets: list[dict[str, str]]
              ) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The newest run matching the first filter set that any run matches, and that set
    (``rows`` selects rows, not runs: it is left out of the matching)."""
    for filters in sets:
        run = newest(runs, {k: v for k, v in filters.items() if k != "rows"})
        if run is not None:
            return run, dict(filters)
    return None, dict(sets[0])


def render(spec: str, results_dir: Path) -> str:
    """The generated text of one block."""
    words = spec.split()
    if not words:
        raise ValueError("a bench block names no benchmark")
    bench, sets = words[0], alternatives(words[1:])
    filters = sets[0]
    path = results_dir / f"{bench}.jsonl"
    if len(sets) > 1 and bench in ("scaling", "goals", "sweep", "ab"):
        raise ValueError(f"a {bench} block takes one filter set, not alternatives (||)")
    if bench == "scaling":
        return render_scaling(store.load(path) if path.exists() else [], filters)
    if bench == "goals":
        return render_goals(results_dir)
    if bench == "sweep":
        return render_sweep(store.load(path) if path.exists() else [], filters)
    if bench == "ab":
        return paired.render(store.load(path) if path.exists() else [],
                             None if filters.get("same") == "yes" else filters.get("base"))
    run, filters = newest_of(store.load(path), sets) if path.exists() else (None, filters)
    rows = filters.pop("rows", None)  # only paths starting with one of these, e.g. AIOProducer
    if run is None:
        raise ValueError(f"no stored {bench} run matches {filters or 'anything'} in {path}")
    results = results_of(run, filters.get("acks"))
    if rows is not None:
        results = [r for r in results if r.path.startswith(tuple(rows.split(",")))]
    table = format_table(results)
    return f"```\n{table}\n```\n\n{caption(run, filters.get('acks'))}\n"


def update(text: str, results_dir: Path) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group(2), results_dir) + m.group(4), text)


SETTINGS_DOC = ROOT / "docs" / "bench" / "settings.md"


def settings_doc() -> str:
    """docs/bench/settings.md: every client's settings, from ``clients.CLIENT_SETTINGS``."""
    from kafka_fast.bench.clients import CLIENT_SETTINGS, SETTING_REASONS

    lines = ["# Benchmark client settings", "",
             "Generated by `tools/bench_report.py` from `kafka_fast/bench/clients.py`, the "
             "settings every benchmark case runs with besides the bootstrap address, topic, "
             "`acks` and compression of the run (each stored run carries a copy).", ""]
    for client, roles in CLIENT_SETTINGS.items():
        lines += [f"## {client}", "", "| role | setting | value | why |", "|---|---|---|---|"]
        lines += [f"| {role} | `{key}` | `{value}` | "
                  f"{SETTING_REASONS[client, key]} |"
                  for role, conf in roles.items() for key, value in conf.items()]
        lines.append("")
    return "\n".join(lines)


def files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report stale blocks, change nothing")
    ap.add_argument("--results", type=Path, default=store.DEFAULT_DIR)
    ap.add_argument("--plot", type=Path, help="also draw the newest runs into this PNG")
    ap.add_argument("--plot-filter", default="", help="key=value words for the plotted runs")
    args = ap.parse_args(argv)
    stale = []
    texts = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        if "<!-- bench:" not in text:
            continue
        texts.append(text)
        new = update(text, args.results)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    want = settings_doc()
    if not SETTINGS_DOC.exists() or SETTINGS_DOC.read_text(encoding="utf-8") != want:
        stale.append(SETTINGS_DOC)
        if not args.check:
            SETTINGS_DOC.write_text(want, encoding="utf-8")
    if not args.check:
        for chart in sweep_charts(texts, args.results, ROOT / "docs" / "bench"):
            print(f"drew: {chart.relative_to(ROOT)}", file=sys.stderr)
    if args.plot:
        filters = dict(w.split("=", 1) for w in args.plot_filter.split())
        shown: list[Result] = []
        for bench in ("produce", "consume"):
            path = args.results / f"{bench}.jsonl"
            run = newest(store.load(path), filters) if path.exists() else None
            if run is not None:
                shown += results_of(run, filters.get("acks"))
        if not shown:
            print("no stored runs to plot", file=sys.stderr)
            return 1
        plot(shown, str(args.plot))
    for path in stale:
        print(f"{'stale' if args.check else 'updated'}: {path.relative_to(ROOT)}",
              file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
