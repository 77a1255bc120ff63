"""Every Python snippet of the README and docs/ runs against a real broker (a private mock
cluster), unless a marker comment above it says why it cannot; see ``snippets.py``."""

from __future__ import annotations

import pytest
from snippets import all_snippets, stray_markers

from kafka_fast import AdminClient, Consumer, Producer

pytestmark = pytest.mark.timeout(180)

SNIPPETS = all_snippets()
#: The snippets that are not run. A new entry needs a marker comment with a reason AND a
#: line here: a snippet never stops running by accident.
NOT_RUN = {"docs/spark.md#1", "docs/spark.md#2", "docs/spark.md#3", "docs/transactions.md#1",
           "docs/share-groups.md#1"}


def _check_readme_consumer(ns: dict) -> None:
    """The README's consumer read records (not an empty first batch) and made a table of
    them: the value of every record is the produced b"hello" or a 100-byte numpy row."""
    view, table = ns["view"], ns["table"]
    assert len(view) > 0
    assert table.num_rows == len(view)
    lengths = {len(v) for v in table.column("value").to_pylist()}
    assert lengths <= {5, 100}, lengths


#: Results checked after a snippet ran, beyond "it raised nothing".
CHECKS = {"README.md#1": _check_readme_consumer}


def test_snippets_are_found():
    names = {s.source for s in SNIPPETS}
    assert {"README.md#1", "docs/migrating-from-confluent-kafka.md#1"} <= names
    assert set(CHECKS) <= names


def test_only_the_listed_snippets_are_not_run_and_each_says_why():
    skipped = {s.source: s.skip_reason for s in SNIPPETS if s.skip_reason is not None}
    assert set(skipped) == NOT_RUN
    assert all(reason for reason in skipped.values()), skipped
    unknown = [s.source for s in SNIPPETS if s.marker is not None and s.skip_reason is None
               and not s.given]
    assert unknown == [], f"markers that are neither skip nor given: {unknown}"
    assert stray_markers() == []


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.source for s in SNIPPETS])
def test_snippet_runs(snippet, mock_cluster, capsys):
    if snippet.skip_reason is not None:
        pytest.skip(f"{snippet.source}: {snippet.skip_reason}")
    available = {"broker": mock_cluster}
    ns: dict = {"__name__": "__snippet__"}
    for name in snippet.given:
        ns[name] = available[name]
    code = compile(snippet.code_for(mock_cluster.bootstrap),
                   f"{snippet.source} (line {snippet.line})", "exec")
    try:
        exec(code, ns)  # running the documentation is the point
        check = CHECKS.get(snippet.source)
        if check is not None:
            check(ns)
    finally:
        for value in ns.values():  # clients a snippet left open (closing twice is a no-op)
            if isinstance(value, (AdminClient, Consumer, Producer)):
                value.close()
