"""How ``make test`` spreads the suite over its pytest-xdist workers (``--dist loadgroup``).

Every worker starts the brokers, clusters and Spark sessions its tests ask for. Left to file
order, several workers each start their own copy of the same 3-node cluster or Spark session,
and each copy then idles until its worker ends, on a two-core machine. Here:

- the files that use one of ``SHARED`` (session resources that take one JVM or more) form one
  group with every other file using it, so one worker starts it once;
- any other file is a group of its own (its module fixtures stay on one worker), except the
  files of ``SPLIT``, each of whose tests is a group (they share no fixture worth keeping);
- groups of ``SPLIT`` run first and the shared groups next: the longest work starts first;
- after the last test of a group, its worker stops the ``SHARED`` resources the next group
  does not use (pytest would keep them, idle, until the worker ends).
"""

from __future__ import annotations

import pytest

#: Session fixtures that start JVMs (brokers, an OAuth server, a Spark session).
SHARED = ("spark", "apache_cluster_session", "apache_rack_cluster_session",
          "apache_share_kafka", "oidc_kafka", "mock_oauth2", "matrix_kafka")
#: Files whose tests are each a group of their own, started first: one wheel test per Python.
SPLIT = ("tests/distribution/test_wheels.py",)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _unit(item: pytest.Item) -> str:
    """What stays on one worker at the least: the test's file, or the test (``SPLIT``)."""
    nodeid = item.nodeid.rsplit("@", 1)[0] if "@" in item.nodeid.rsplit("]", 1)[-1] \
        else item.nodeid
    return nodeid if _file(item) in SPLIT else _file(item)


def _shared(item: pytest.Item) -> set[str]:
    return set(getattr(item, "fixturenames", ())) & set(SHARED)


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Unit -> group name: units sharing a ``SHARED`` fixture are one group (transitively),
    named by those fixtures; any other unit is its own group."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for item in items:
        for name in _shared(item):
            parent[find(f"fixture:{name}")] = find(_unit(item))
    names: dict[str, list[str]] = {}
    for key in list(parent):
        if key.startswith("fixture:"):
            names.setdefault(find(key), []).append(key.split(":", 1)[1])
    return {_unit(item): "+".join(sorted(names[find(_unit(item))]))
            if find(_unit(item)) in names else _unit(item) for item in items}


class _Plan:
    """This process's groups, the shared fixtures each uses, and those it has started."""

    def __init__(self) -> None:
        self.group: dict[str, str] = {}
        self.fixtures: dict[str, set[str]] = {}
        self.started: dict[str, list] = {}


_PLAN = _Plan()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group and order the items (before pytest-xdist reads the ``xdist_group`` marks)."""
    # pytest-xdist workers run with dist "no" and its own loadgroup flag
    if not (config.getoption("loadgroup", False) or config.getoption("dist", "no") == "loadgroup"):
        return
    _PLAN.group.update(groups(items))
    for item in items:
        _PLAN.fixtures.setdefault(_PLAN.group[_unit(item)], set()).update(_shared(item))
    order = {g: i for i, g in enumerate(dict.fromkeys(_PLAN.group[_unit(i)] for i in items))}

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = _PLAN.group[_unit(item)]
        first = 0 if _file(item) in SPLIT else 1 if _PLAN.fixtures[group] else 2
        return first, order[group]

    items.sort(key=rank)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_PLAN.group[_unit(item)]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """After the last test of a group, stop the ``SHARED`` fixtures the next group does not
    use (at the end of the session pytest stops the rest as usual)."""
    yield
    if not _PLAN.group:
        return
    for name in _shared(item):
        for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
            if fixturedef.scope == "session" and fixturedef not in _PLAN.started.get(name, []):
                _PLAN.started.setdefault(name, []).append(fixturedef)
    group = _PLAN.group.get(_unit(item))
    if nextitem is None or _PLAN.group.get(_unit(nextitem)) == group:
        return
    wanted = _PLAN.fixtures.get(_PLAN.group.get(_unit(nextitem), ""), set())
    for name in set(_PLAN.started) - wanted:
        for fixturedef in _PLAN.started.pop(name):
            fixturedef.finish(item._request)
