"""docs/soak.md's figures are generated from the stored soak run (tools/soak_report.py), the
run they show held every invariant, and its chart is there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kafka_fast.bench import store

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("soak_report", ROOT / "tools" / "soak_report.py")
soak_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak_report)


def test_soak_doc_is_generated_from_the_stored_run():
    runs = store.load(soak_report.RESULTS / "soak.jsonl")
    text = soak_report.DOC.read_text(encoding="utf-8")
    block = text.split(soak_report.BEGIN, 1)[1].split(soak_report.END, 1)[0]
    assert block.strip() == soak_report.render(runs).strip()
    latest = runs[-1]["results"][0]
    assert latest["violations"] == []
    assert latest["settings"]["seconds"] == 1800
    # Every second sampled (a second or two lost to a slow /proc read at most).
    assert len(latest["samples"]) >= 0.9 * latest["settings"]["seconds"]
    assert soak_report.CHART.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(soak.md)" in (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
