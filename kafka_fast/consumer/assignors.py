"""Partition assignors of the classic group protocol: range, roundrobin, cooperative-sticky.

The group leader runs ``assign`` over every member's decoded subscription. Member order is
by ``group.instance.id`` when the member has one, else by member id (as the Java client
does), so every leader computes the same result for the same group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

EAGER = "eager"
COOPERATIVE = "cooperative"

Assignment = dict[str, list[int]]


@dataclass
class Subscription:
    """One member's view as sent in JoinGroup: topics, owned partitions and generation."""

    topics: list[str]
    owned: Assignment = field(default_factory=dict)
    generation: int = -1
    user_data: bytes | None = None
    rack: str | None = None
    group_instance_id: str | None = None


def _member_order(members: Mapping[str, Subscription]) -> list[str]:
    return sorted(
        members,
        key=lambda m: (members[m].group_instance_id is None, members[m].group_instance_id or m, m),
    )


class Assignor:
    """Base class: ``name`` as sent in JoinGroup and ``rebalance_protocol``."""

    name = ""
    rebalance_protocol = EAGER

    def assign(
        self, partitions: Mapping[str, int], members: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Map each member id to ``{topic: [partition, ...]}``.

        ``partitions`` gives the partition count of every topic some member subscribed to
        (topics missing from it do not exist and get no assignment).
        """
        raise NotImplementedError


class RangeAssignor(Assignor):
    """Per topic, contiguous ranges of partitions to the members subscribed to it."""

    name = "range"

    def assign(self, partitions: Mapping[str, int],
               members: Mapping[str, Subscription]) -> dict[str, Assignment]:
        out: dict[str, Assignment] = {m: {} for m in members}
        order = _member_order(members)
        for topic in sorted(partitions):
            subs = [m for m in order if topic in members[m].topics]
            if not subs:
                continue
            count = partitions[topic]
            per, extra = divmod(count, len(subs))
            start = 0
            for i, member in enumerate(subs):
                n = per + (1 if i < extra else 0)
                if n:
                    out[member][topic] = list(range(start, start + n))
                start += n
        return out


class RoundRobinAssignor(Assignor):
    """All partitions of all topics, sorted, dealt in turn to the members subscribed."""

    name = "roundrobin"

    def assign(self, partitions: Mapping[str, int],
               members: Mapping[str, Subscription]) -> dict[str, Assignment]:
        out: dict[str, Assignment] = {m: {} for m in members}
        order = _member_order(members)
        if not order:
            return out
        turn = 0
        for topic in sorted(partitions):
            for p in range(partitions[topic]):
                for _ in range(len(order)):
                    member = order[turn % len(order)]
                    turn += 1
                    if topic in members[member].topics:
                        out[member].setdefault(topic, []).append(p)
                        break
        return out


class CooperativeStickyAssignor(Assignor):
    """Balanced and sticky: members keep what they own; only what must move moves.

    A partition moving between two members is left out of this round's assignment
    entirely: its old owner revokes it and rejoins, and the follow-up rebalance gives it to
    the new owner (the incremental cooperative protocol, KIP-429).
    """

    name = "cooperative-sticky"
    rebalance_protocol = COOPERATIVE

    def assign(self, partitions: Mapping[str, int],
               members: Mapping[str, Subscription]) -> dict[str, Assignment]:
        order = _member_order(members)
        if not order:
            return {}
        eligible: dict[tuple[str, int], list[str]] = {}
        for topic in sorted(partitions):
            subs = [m for m in order if topic in members[m].topics]
            for p in range(partitions[topic]):
                eligible[(topic, p)] = subs
        # Previous owners: the claim from the highest generation wins a conflict.
        owner: dict[tuple[str, int], str] = {}
        owner_gen: dict[tuple[str, int], int] = {}
        for m in order:
            sub = members[m]
            for topic, parts in sub.owned.items():
                for p in parts:
                    tp = (topic, p)
                    if tp not in eligible or m not in eligible[tp]:
                        continue
                    if tp not in owner or sub.generation > owner_gen[tp]:
                        owner[tp] = m
                        owner_gen[tp] = sub.generation
        target: dict[str, set[tuple[str, int]]] = {m: set() for m in order}
        for tp, m in owner.items():
            target[m].add(tp)
        # Members over their fair share give up their highest partitions first.
        self._trim_to_quota(target, eligible)
        assigned = {tp for parts in target.values() for tp in parts}
        for tp in sorted(eligible):
            if tp in assigned or not eligible[tp]:
                continue
            best = min(eligible[tp], key=lambda m: (len(target[m]), order.index(m)))
            target[best].add(tp)
        self._balance(target, eligible, order)
        out: dict[str, Assignment] = {}
        for m in order:
            result: Assignment = defaultdict(list)
            for topic, p in sorted(target[m]):
                prev = owner.get((topic, p))
                if prev is not None and prev != m:
                    continue  # the previous owner must revoke it first
                result[topic].append(p)
            out[m] = dict(result)
        return out

    @staticmethod
    def _trim_to_quota(target, eligible) -> None:
        total = len([tp for tp in eligible if eligible[tp]])
        members = list(target)
        if not members:
            return
        ceiling = -(-total // len(members))
        for m in members:
            if len(target[m]) > ceiling:
                keep = sorted(target[m])[:ceiling]
                target[m] = set(keep)

    @staticmethod
    def _balance(target, eligible, order) -> None:
        # Move one partition at a time from the most to the least loaded eligible member
        # until no move reduces the spread (bounded by the partition count).
        for _ in range(len(eligible) + 1):
            moved = False
            for donor in sorted(order, key=lambda m: -len(target[m])):
                candidates = sorted(target[donor], reverse=True)
                for tp in candidates:
                    receivers = [
                        m for m in eligible[tp] if len(target[m]) + 1 < len(target[donor])
                    ]
                    if receivers:
                        recv = min(receivers, key=lambda m: (len(target[m]), order.index(m)))
                        target[donor].discard(tp)
                        target[recv].add(tp)
                        moved = True
                        break
                if moved:
                    break
            if not moved:
                return


ASSIGNORS: dict[str, type[Assignor]] = {
    cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)
}


def make_assignors(names: Iterable[str]) -> list[Assignor]:
    """Assignor instances for ``partition.assignment.strategy``; ValueError on a bad list."""
    out = []
    for name in names:
        cls = ASSIGNORS.get(name.strip().lower())
        if cls is None:
            raise ValueError(
                f"unknown partition.assignment.strategy {name!r} "
                f"(expected {', '.join(ASSIGNORS)})"
            )
        out.append(cls())
    if not out:
        raise ValueError("partition.assignment.strategy is empty")
    protocols = {a.rebalance_protocol for a in out}
    if len(protocols) > 1:
        raise ValueError(
            "partition.assignment.strategy cannot mix cooperative-sticky with eager assignors"
        )
    return out
