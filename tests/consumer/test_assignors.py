"""Assignors: exact assignments for known groups, balance and stickiness."""

from __future__ import annotations

import pytest

from kafka_fast.consumer.assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    Subscription,
    make_assignors,
)


def subs(**topics_by_member):
    return {m: Subscription(topics=list(t)) for m, t in topics_by_member.items()}


def test_range_splits_each_topic_in_contiguous_ranges():
    members = subs(a=["t1", "t2"], b=["t1", "t2"])
    out = RangeAssignor().assign({"t1": 3, "t2": 6}, members)
    assert out == {"a": {"t1": [0, 1], "t2": [0, 1, 2]}, "b": {"t1": [2], "t2": [3, 4, 5]}}


def test_range_only_gives_a_topic_to_its_subscribers():
    members = subs(a=["t1"], b=["t1", "t2"], c=["t2"])
    out = RangeAssignor().assign({"t1": 2, "t2": 3}, members)
    assert out == {"a": {"t1": [0]}, "b": {"t1": [1], "t2": [0, 1]}, "c": {"t2": [2]}}


def test_range_orders_static_members_by_instance_id():
    members = {
        "m-1": Subscription(["t"], group_instance_id="z"),
        "m-2": Subscription(["t"], group_instance_id="a"),
    }
    out = RangeAssignor().assign({"t": 4}, members)
    assert out == {"m-2": {"t": [0, 1]}, "m-1": {"t": [2, 3]}}


def test_roundrobin_deals_sorted_partitions_in_turn():
    members = subs(a=["t1", "t2"], b=["t1", "t2"])
    out = RoundRobinAssignor().assign({"t1": 3, "t2": 2}, members)
    assert out == {"a": {"t1": [0, 2], "t2": [1]}, "b": {"t1": [1], "t2": [0]}}


def test_roundrobin_skips_members_not_subscribed():
    members = subs(a=["t1"], b=["t1", "t2"])
    out = RoundRobinAssignor().assign({"t1": 2, "t2": 2}, members)
    assert out == {"a": {"t1": [0]}, "b": {"t1": [1], "t2": [0, 1]}}


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor(),
                                      CooperativeStickyAssignor()])
def test_every_assignor_splits_six_partitions_three_three(assignor):
    out = assignor.assign({"t": 6}, subs(a=["t"], b=["t"]))
    assert sorted(len(v["t"]) for v in out.values()) == [3, 3]
    assert sorted(out["a"]["t"] + out["b"]["t"]) == list(range(6))


def test_cooperative_sticky_first_assignment_is_balanced():
    out = CooperativeStickyAssignor().assign({"t": 7}, subs(a=["t"], b=["t"], c=["t"]))
    got = sorted(p for a in out.values() for p in a["t"])
    assert got == list(range(7))
    assert sorted(len(a["t"]) for a in out.values()) == [2, 2, 3]


def test_cooperative_sticky_moves_only_what_must_move_in_two_rounds():
    assignor = CooperativeStickyAssignor()
    members = {
        "a": Subscription(["t"], owned={"t": [0, 1, 2, 3, 4, 5]}, generation=1),
        "b": Subscription(["t"]),
    }
    first = assignor.assign({"t": 6}, members)
    # a keeps three, releases three; b gets nothing until a has revoked them.
    assert first == {"a": {"t": [0, 1, 2]}, "b": {}}
    members = {
        "a": Subscription(["t"], owned=first["a"], generation=2),
        "b": Subscription(["t"], owned={}, generation=2),
    }
    second = assignor.assign({"t": 6}, members)
    assert second == {"a": {"t": [0, 1, 2]}, "b": {"t": [3, 4, 5]}}


def test_cooperative_sticky_keeps_owners_when_a_member_leaves():
    assignor = CooperativeStickyAssignor()
    members = {
        "a": Subscription(["t"], owned={"t": [0, 3]}, generation=4),
        "b": Subscription(["t"], owned={"t": [1, 4]}, generation=4),
    }
    out = assignor.assign({"t": 6}, members)
    # c (which owned 2 and 5) left: a and b keep theirs and share 2 and 5.
    assert sorted(out["a"]["t"]) in ([0, 2, 3], [0, 3, 5])
    assert sorted(out["a"]["t"] + out["b"]["t"]) == list(range(6))
    assert set(out["a"]["t"]) >= {0, 3} and set(out["b"]["t"]) >= {1, 4}


def test_cooperative_sticky_conflicting_claims_go_to_the_newest_generation():
    members = {
        "a": Subscription(["t"], owned={"t": [0, 1]}, generation=3),
        "b": Subscription(["t"], owned={"t": [1]}, generation=5),
    }
    out = CooperativeStickyAssignor().assign({"t": 2}, members)
    assert out == {"a": {"t": [0]}, "b": {"t": [1]}}


def test_cooperative_sticky_drops_partitions_of_vanished_topics():
    members = {
        "a": Subscription(["t"], owned={"t": [0, 1, 7], "gone": [0]}, generation=2),
    }
    out = CooperativeStickyAssignor().assign({"t": 2}, members)
    assert out == {"a": {"t": [0, 1]}}


def test_make_assignors_validates_names_and_protocol_mix():
    assert [a.name for a in make_assignors(["range", "roundrobin"])] == ["range", "roundrobin"]
    with pytest.raises(ValueError, match="unknown partition.assignment.strategy 'sticky'"):
        make_assignors(["sticky"])
    with pytest.raises(ValueError, match="cannot mix"):
        make_assignors(["range", "cooperative-sticky"])


def test_subscription_and_assignment_bytes_follow_the_consumer_protocol():
    from kafka_fast.consumer.consumer_protocol import (
        decode_assignment,
        decode_subscription,
        encode_assignment,
        encode_subscription,
    )

    # version, topics ["t"], null user data
    assert encode_subscription(Subscription(["t"]), 0).hex() == "000000000001000174ffffffff"
    raw = encode_subscription(Subscription(["t"], owned={"t": [1, 0]}, generation=4), 3)
    assert raw.hex() == ("0003" "00000001" "000174" "ffffffff" "00000001" "000174"
                         "00000002" "00000000" "00000001" "00000004" "ffff")
    sub = decode_subscription(raw, "inst")
    assert (sub.topics, sub.owned, sub.generation, sub.group_instance_id) == (
        ["t"], {"t": [0, 1]}, 4, "inst")
    raw = encode_assignment({"t": [2, 1]})
    assert raw.hex() == "0000" "00000001" "000174" "00000002" "00000001" "00000002" "ffffffff"
    assert decode_assignment(raw) == {"t": [1, 2]}
    assert decode_assignment(b"") == {}
    # A newer version than we know is read with the fields we know.
    newer = b"\x00\x09" + encode_subscription(Subscription(["u"]), 3)[2:] + b"\x01\x02"
    assert decode_subscription(newer).topics == ["u"]
