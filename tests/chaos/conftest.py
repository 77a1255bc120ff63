"""Fixtures of the chaos tests: the session's seed and one ChaosRun per test, summarised
at the end of the run (and attached to the report of a failed test)."""

from __future__ import annotations

import pytest
from chaos_run import ChaosRun, session_seed

_SUMMARIES: list[str] = []


@pytest.fixture(scope="session")
def chaos_seed() -> int:
    """The seed of every chaos test in this session (CHAOS_SEED, or random)."""
    return session_seed()


@pytest.fixture
def chaos(request, chaos_seed: int) -> ChaosRun:
    """This test's seeded random source and fault log."""
    run = ChaosRun(request.node.name, chaos_seed)
    print(f"chaos: {run.test} seed {chaos_seed}", flush=True)
    yield run
    _SUMMARIES.append(run.summary())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    run = getattr(item, "funcargs", {}).get("chaos")
    if report.failed and isinstance(run, ChaosRun):
        report.sections.append(("chaos schedule",
                                run.summary() + "\n" + "\n".join(run.faults)))


def pytest_terminal_summary(terminalreporter):
    if _SUMMARIES:
        terminalreporter.section("chaos")
        for line in _SUMMARIES:
            terminalreporter.write_line(line)
