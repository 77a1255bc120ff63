"""Acknowledgement state of a share consumer (application thread only).

Records handed to the application stay *in flight* until acknowledged; acknowledged offsets
are *pending* until a ShareFetch or ShareAcknowledge carries them to the partition's leader.
"""

from __future__ import annotations

from ..protocol import messages as m
from .model import GAP, AcknowledgeType, IllegalStateException

TP = tuple[str, int]


def ack_batches(offsets: dict[int, int]) -> list[tuple[int, int, list[int]]]:
    """``{offset: type}`` as (first, last, types) runs of consecutive offsets; a run whose
    offsets share one type carries it once."""
    out: list[tuple[int, int, list[int]]] = []
    for off in sorted(offsets):
        kind = offsets[off]
        if out and out[-1][1] == off - 1:
            first, _, types = out[-1]
            out[-1] = (first, off, [*types, kind])
        else:
            out.append((off, off, [kind]))
    return [(f, last, types if len(set(types)) > 1 else types[:1]) for f, last, types in out]


class Acknowledgements:
    """In-flight records (handed out, not yet acknowledged) and pending acknowledgements."""

    def __init__(self) -> None:
        self.in_flight: dict[TP, set[int]] = {}
        self.pending: dict[TP, dict[int, int]] = {}

    def hand_out(self, tp: TP, offsets: list[int]) -> None:
        """``offsets`` of ``tp`` were given to the application."""
        self.in_flight.setdefault(tp, set()).update(offsets)

    def gaps(self, tp: TP, offsets: list[int], kind: int = GAP) -> None:
        """Acquired offsets the application never sees (without a record, or cut off):
        acknowledged as ``kind`` with the next request."""
        if not offsets:
            return
        pending = self.pending.setdefault(tp, {})
        for off in offsets:
            pending[off] = kind

    def acknowledge(self, tp: TP, offset: int, kind: int) -> None:
        """Record ``kind`` for an in-flight ``offset`` (IllegalStateException if it is not);
        a RENEW leaves the offset in flight."""
        offsets = self.in_flight.get(tp)
        if offsets is None or offset not in offsets:
            raise IllegalStateException(
                f"offset {offset} of {tp[0]} [{tp[1]}] is not in flight (not returned by "
                f"poll, or acknowledged already)")
        if kind == AcknowledgeType.RENEW:
            self.pending.setdefault(tp, {})[offset] = kind
            return
        offsets.discard(offset)
        if not offsets:
            del self.in_flight[tp]
        self.pending.setdefault(tp, {})[offset] = kind

    def accept_all(self) -> None:
        """Accept every in-flight record (implicit acknowledgement)."""
        for tp, offsets in self.in_flight.items():
            pending = self.pending.setdefault(tp, {})
            for off in offsets:
                pending[off] = AcknowledgeType.ACCEPT
        self.in_flight.clear()

    def unacknowledged(self) -> int:
        """How many handed-out records await an acknowledgement."""
        return sum(len(v) for v in self.in_flight.values())

    def forget(self, tps: set[TP]) -> None:
        """Drop in-flight records of ``tps`` (their session is gone: the broker released
        them)."""
        for tp in tps:
            self.in_flight.pop(tp, None)
            self.pending.pop(tp, None)

    def take(self, tps: set[TP]) -> dict[TP, dict[int, int]]:
        """Remove and return the pending acknowledgements of ``tps``."""
        return {tp: self.pending.pop(tp) for tp in list(self.pending)
                if tp in tps and self.pending[tp]}

    def pending_partitions(self) -> set[TP]:
        return {tp for tp, offs in self.pending.items() if offs}


def has_renew(acks: dict[TP, dict[int, int]]) -> bool:
    """True when ``acks`` renew any record's lock."""
    return any(kind == AcknowledgeType.RENEW for offsets in acks.values()
               for kind in offsets.values())


def fetch_ack_batches(offsets: dict[int, int]) -> list:
    """ShareFetch's AcknowledgementBatch list for ``{offset: type}``."""
    Batch = m.ShareFetchRequest.AcknowledgementBatch
    return [Batch(first_offset=f, last_offset=last, acknowledge_types=types)
            for f, last, types in ack_batches(offsets)]


def acknowledge_ack_batches(offsets: dict[int, int]) -> list:
    """ShareAcknowledge's AcknowledgementBatch list for ``{offset: type}``."""
    Batch = m.ShareAcknowledgeRequest.AcknowledgementBatch
    return [Batch(first_offset=f, last_offset=last, acknowledge_types=types)
            for f, last, types in ack_batches(offsets)]
