"""The soak of tests/chaos/soak.py (``make soak``): run it, store the result, and render
docs/soak.md's figures and docs/soak.png from the stored runs.

    python tools/soak_report.py [--seconds 1800] [--rate 50] [--restart-every 120]
                                [--seed N] [--note TEXT]
    python tools/soak_report.py --render   # only rewrite docs/soak.md and docs/soak.png

A run starts Toxiproxy and its own 3-node cluster (tools/fetch_kafka.sh and
tools/fetch_toxiproxy.sh must have run), appends one JSON line to
docs/bench/results/soak.jsonl (commit, machine, settings, the figures, every second's sample,
the schedule of restarts and toxics, what was violated) and rewrites the block between
``<!-- soak -->`` and ``<!-- /soak -->`` in docs/soak.md and the chart from the newest run.
It exits 1 when an invariant was violated (the run is stored all the same).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "chaos", ROOT / "tests" / "producer"):
    sys.path.insert(0, str(_p))

from kafka_fast.bench import store  # noqa: E402

RESULTS = ROOT / "docs" / "bench" / "results"
DOC = ROOT / "docs" / "soak.md"
CHART = ROOT / "docs" / "soak.png"
BEGIN, END = "<!-- soak -->", "<!-- /soak -->"
RESOURCES = {"rss_mb": "RSS (MB)", "threads": "threads", "fds": "open descriptors",
             "tcp": "TCP connections"}


def run(seconds: float, rate: int, restart_every: float, seed: int, note: str
        ) -> dict[str, Any]:
    from harness.toxiproxy import start_proxied_cluster
    from soak import RESTART_TIMEOUT, SoakSettings, run_soak

    settings = SoakSettings(seconds=seconds, rate=rate, restart_every=restart_every, seed=seed)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        cluster = start_proxied_cluster(Path(tmp) / "cluster", RESTART_TIMEOUT)
        try:
            result = run_soak(cluster, Path(tmp) / "soak", settings)
        finally:
            cluster.stop()
    stored = store.record("soak", "Apache Kafka (3 nodes, one Toxiproxy per broker)",
                          {**result["settings"], "note": note}, [result])
    return stored


def _first_sample(result: dict[str, Any], key: str) -> Any:
    return result["samples"][0][key] if result["samples"] else None


def render(runs: list[dict[str, Any]]) -> str:
    """The Markdown figures of the newest run."""
    latest = runs[-1]
    r = latest["results"][0]
    s = latest["settings"]
    m = latest["machine"]
    last = r["samples"][-1] if r["samples"] else {}
    toxics = ", ".join(f"{k} {v}" for k, v in r["toxics"].items())
    lines = [
        "| figure | value |", "|---|---|",
        f"| produced for | {s['seconds'] / 60:.0f} min at {s['rate']} records/s "
        f"(run took {r['wall_s'] / 60:.1f} min with start-up, drain and checks) |",
        f"| records (idempotent producer) | {r['records']:,} "
        f"(delivered {last.get('delivered', 0):,}, group saw {last.get('grouped', 0):,}) |",
        f"| results in the read_committed target | {r['target_records']:,} |",
        f"| rolling restarts / broker restarts | {r['restart_rounds']} / "
        f"{r['broker_restarts']} (every {s['restart_every']:.0f} s; "
        + (", ".join(f"{v} after {k}" for k, v in r["restarts_by_signal"].items())
           if "restarts_by_signal" in r else "all after SIGTERM: stored before SIGKILL "
           "stops joined the schedule") + ") |",
        f"| toxics applied | {r['toxics_applied']} ({toxics}) |",
        f"| longest stall (s), limit {r['stall_limit']:.0f} | "
        + ", ".join(f"{k} {v}" for k, v in r["stalls"].items()) + " |",
        f"| violations | {len(r['violations'])} |",
        "",
        "| resource | first sample | first steady median | end median | margin | within |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in RESOURCES.items():
        g = r["growth"][key]
        (b0, b1), (e0, e1) = g["windows"]
        lines.append(f"| {label} | {_first_sample(r, key)} | {g['base']} ({b0:.0f}-{b1:.0f} s)"
                     f" | {g['end']} ({e0:.0f}-{e1:.0f} s) | +{g['margin']:g} | "
                     f"{'yes' if g['ok'] else 'NO'} |")
    if r["violations"]:
        lines.append("")
        lines += [f"- {v}" for v in r["violations"][:20]]
    lines.append("")
    lines.append(f"Run of {latest['time']} at commit {latest['commit']}, {m['cpus']} x "
                 f"{m['cpu']}, Python {m['python']}, seed {s['seed']}. "
                 f"{s.get('note', '')}".rstrip())
    lines.append("")
    lines.append("![the client process during the soak](soak.png)")
    return "\n".join(lines)


def chart(runs: list[dict[str, Any]], path: Path) -> None:
    """The newest run's samples: RSS; threads, descriptors, connections; progress; with
    the restarts shaded and the fault on at each moment marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = runs[-1]["results"][0]
    samples = r["samples"]
    t = [x["t"] / 60 for x in samples]
    fig, axes = plt.subplots(3, 1, figsize=(12, 9), sharex=True)
    axes[0].plot(t, [x["rss_mb"] for x in samples], color="#1f77b4", lw=1)
    axes[0].set_ylabel("RSS (MB)")
    for key, color in (("threads", "#2ca02c"), ("fds", "#ff7f0e"), ("tcp", "#9467bd")):
        axes[1].plot(t, [x[key] for x in samples], color=color, lw=1, label=RESOURCES[key])
    axes[1].set_ylabel("count")
    axes[1].legend(loc="upper left", fontsize=8, ncol=3)
    for key, color in (("delivered", "#1f77b4"), ("transformed", "#d62728"),
                       ("grouped", "#2ca02c")):
        axes[2].plot(t, [x[key] for x in samples], color=color, lw=1, label=key)
    axes[2].set_ylabel("records")
    axes[2].legend(loc="upper left", fontsize=8)
    axes[2].set_xlabel("minutes since the client started")
    faults = sorted({x["fault"].split("@")[0] for x in samples if x["fault"]})
    colors = dict(zip(faults, plt.get_cmap("tab10").colors, strict=False))
    for ax in axes:
        for x, nxt in zip(samples, samples[1:], strict=False):
            if x["down"]:
                ax.axvspan(x["t"] / 60, nxt["t"] / 60, color="#bbbbbb", alpha=0.35, lw=0)
        ax.grid(alpha=0.3)
    low = axes[0].get_ylim()[0]
    for x, nxt in zip(samples, samples[1:], strict=False):
        if x["fault"]:
            axes[0].plot([x["t"] / 60, nxt["t"] / 60], [low, low], lw=6, solid_capstyle="butt",
                         color=colors[x["fault"].split("@")[0]])
    from matplotlib.patches import Patch

    handles = [Patch(color="#bbbbbb", alpha=0.35, label="a broker down")] + [
        Patch(color=colors[f], label=f) for f in faults]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    s = runs[-1]["settings"]
    fig.suptitle(f"kafka_fast soak: {r['records']:,} records over {s['seconds'] / 60:.0f} min, "
                 f"{r['broker_restarts']} broker restarts, {r['toxics_applied']} toxics "
                 f"(bar at the foot of the top panel: the fault on)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_doc(runs: list[dict[str, Any]]) -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{render(runs)}\n{END}{tail}")
    chart(runs, CHART)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1800.0, help="how long records flow")
    ap.add_argument("--rate", type=int, default=50, help="records per second")
    ap.add_argument("--restart-every", type=float, default=120.0,
                    help="seconds between rolling restarts of the brokers")
    ap.add_argument("--seed", type=int, default=None, help="the toxic schedule's seed")
    ap.add_argument("--note", default="", help="stored with the run (e.g. a busy machine)")
    ap.add_argument("--render", action="store_true", help="only rewrite docs/soak.md")
    args = ap.parse_args(argv)
    if args.seconds < 60 or args.rate < 1 or args.restart_every <= 0:
        raise SystemExit("--seconds must be at least 60, --rate and --restart-every positive")
    path = RESULTS / "soak.jsonl"
    violated = False
    if not args.render:
        seed = random.SystemRandom().randrange(1 << 32) if args.seed is None else args.seed
        stored = run(args.seconds, args.rate, args.restart_every, seed, args.note)
        violated = bool(stored["results"][0]["violations"])
        path = store.append(RESULTS, stored)
    write_doc(store.load(path))
    return 1 if violated else 0


if __name__ == "__main__":
    sys.exit(main())
