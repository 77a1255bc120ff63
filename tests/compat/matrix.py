"""The broker-version matrix: which kafka_fast features run on which Apache Kafka release.

``FEATURES`` is the definition (feature id, the table's wording, the first release that
has it); the releases are the pom's ``kafka.matrix.versions``. Each test of
``test_broker_matrix.py`` writes one result file per (feature, release) into
``results_dir()``; ``tools/broker_matrix.py`` turns the results into docs/compatibility.md.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

#: Outcomes a result file can hold. "unsupported": the broker lacks the feature and the
#: test showed the client's clear error instead.
PASSED, UNSUPPORTED, FAILED = "passed", "unsupported", "failed"


@dataclass(frozen=True)
class Feature:
    id: str
    title: str
    since: str = "0"   # first Apache Kafka release serving it ("0": every matrix release)
    note: str = ""     # shown where the broker lacks it


FEATURES: tuple[Feature, ...] = (
    *(Feature(f"produce-{c}", f"produce, `compression.type={c}`") for c in CODECS),
    Feature("idempotence", "idempotent producer (`enable.idempotence`)"),
    Feature("transactions", "transactions: commit, abort, `read_committed`"),
    Feature("consume", "consume by `assign()` (Fetch, exact records and offsets)"),
    Feature("group-classic", "consumer group, `group.protocol=classic` (commits, resume)"),
    Feature("group-consumer", "consumer group, `group.protocol=consumer` (KIP-848)", "4.0.0",
            "KIP-848 is early access in 3.9, off by default"),
    Feature("admin", "admin: create/delete topics, partitions, configs, list offsets"),
    Feature("offsets-for-times", "`offsets_for_times` (ListOffsets by timestamp)"),
)
FEATURE_IDS = tuple(f.id for f in FEATURES)


def version_key(version: str) -> tuple[int, ...]:
    """``"4.0.2"`` -> ``(4, 0, 2)``; raises ValueError naming a malformed version."""
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        raise ValueError(f"not a release number: {version!r}") from None


def feature(feature_id: str) -> Feature:
    for f in FEATURES:
        if f.id == feature_id:
            return f
    raise KeyError(f"no matrix feature {feature_id!r} (known: {', '.join(FEATURE_IDS)})")


def supported(feature_id: str, version: str) -> bool:
    """Whether Apache Kafka ``version`` serves the feature (by the definition above)."""
    return version_key(version) >= version_key(feature(feature_id).since)


def results_dir() -> Path:
    """Where the matrix tests write their outcomes (KAFKA_FAST_MATRIX_RESULTS overrides)."""
    return Path(os.environ.get("KAFKA_FAST_MATRIX_RESULTS") or ROOT / "build" / "broker-matrix")


def write_result(directory: Path, feature_id: str, version: str, outcome: str, *,
                 records: int, offsets: int, test: str, detail: str = "") -> Path:
    """Store one cell's outcome (one small JSON file per cell: no locking needed)."""
    if outcome not in (PASSED, UNSUPPORTED, FAILED):
        raise ValueError(f"unknown outcome {outcome!r}")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{feature_id}@{version}.json"
    path.write_text(json.dumps({
        "feature": feature_id, "version": version, "outcome": outcome,
        "records": records, "offsets": offsets, "test": test, "detail": detail[:300],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1) + "\n")
    return path


def read_results(directory: Path) -> dict[tuple[str, str], dict]:
    """Every stored cell of ``directory``: ``{(feature, version): result}``."""
    cells = {}
    for path in sorted(directory.glob("*@*.json")):
        data = json.loads(path.read_text())
        cells[(data["feature"], data["version"])] = data
    return cells


class Cell:
    """One (feature, release) of the matrix. Tests compare through ``records`` and
    ``offsets`` (exact equality, counted); a passing test that compared nothing fails."""

    def __init__(self, feature_id: str, version: str) -> None:
        self.feature = feature_id
        self.version = version
        self.supported = supported(feature_id, version)
        self.records_checked = 0
        self.offsets_checked = 0
        self.refusal_checked = False

    def records(self, got: list, want: list) -> None:
        """Assert the exact records (lists of tuples, in order) and count them."""
        assert want, "an empty expectation shows nothing"
        assert got == want
        self.records_checked += len(want)

    def offsets(self, got: dict | list, want: dict | list) -> None:
        """Assert exact offsets (by partition or in order) and count them."""
        assert want, "an empty expectation shows nothing"
        assert got == want
        self.offsets_checked += len(want)

    def refused(self) -> None:
        """The broker lacks the feature and the test saw the client's error saying so."""
        assert not self.supported, f"{self.feature} is served by Kafka {self.version}"
        self.refusal_checked = True

    def verdict(self) -> tuple[str, str]:
        """(outcome, detail) of a test whose body passed."""
        if not self.supported:
            if self.refusal_checked:
                return UNSUPPORTED, "the client reported the broker's lack of it"
            return FAILED, "unsupported release, but the refusal was not checked"
        if self.records_checked + self.offsets_checked == 0:
            return FAILED, "passed without comparing exact records or offsets"
        return PASSED, ""
