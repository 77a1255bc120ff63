"""The consumer group part of the statistics (``cgrp``): kept by the consumer, read by the
statistics snapshot. It holds the group member and the fetch state, never the consumer."""

from __future__ import annotations

from ..stats import GroupView
from .fetch_state import FetchState
from .membership import GroupMember


class GroupStats:
    """Rebalances served so far and the current member; calling it gives a ``GroupView``."""

    def __init__(self, state: FetchState) -> None:
        self.state = state
        self.member: GroupMember | None = None
        self.rebalance_cnt = 0

    def __call__(self) -> GroupView:
        member = self.member
        if member is None:
            name = "init"
        else:
            name = "up" if getattr(member, "coordinator", None) is not None else "wait-coord"
        with self.state.lock:
            size = len(self.state.parts)
        return GroupView(name, self.rebalance_cnt, size)
