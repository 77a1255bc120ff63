"""The compiled Produce framing and response parser (and their pure-Python twin) against the
generated codec: byte-identical requests, equal fields, the same fallbacks, and malformed
bytes refused with a clear error."""

from __future__ import annotations

import importlib
import random
import uuid
from pathlib import Path

import pytest

from kafka_fast.errors import ProtocolError
from kafka_fast.producer import wire
from kafka_fast.protocol import frame_request, headers
from kafka_fast.protocol.messages import ProduceRequest, ProduceResponse
from kafka_fast.protocol.versioned import fit

VERSIONS = range(ProduceRequest.MIN_VERSION, ProduceRequest.MAX_VERSION + 1)
R = ProduceResponse
DATA = Path(__file__).resolve().parent / "data"


def _impls() -> list:
    out = [pytest.param(importlib.import_module("kafka_fast._pure.producewire"), id="pure")]
    try:
        native = importlib.import_module("kafka_fast._native._producewire")
    except ImportError:  # not built: only the twin
        return out
    return [pytest.param(native, id="native"), *out]


@pytest.fixture(params=_impls())
def impl(request):
    return request.param


def _batch(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size)


def _requests(rng: random.Random) -> list[tuple]:
    """(client id, transactional id, acks, timeout, {topic: [(partition, batch)]}, ids)."""
    cases = []
    sizes = [0, 1, 100, 1023, 1024, 5000, 70_000]
    for client_id, txn_id, acks, topics in [
        ("kafka-fast", None, -1, {"t": [(0, 61)]}),
        (None, "txn-1", 1, {"a": [(0, 1024), (2, 10)], "b": [(5, 5000)]}),
        ("é-client", "tx-é", 0, {"topic-é": [(i, sizes[i % len(sizes)]) for i in range(9)]}),
        ("c", None, -1, {f"t{n}": [(p, 200 + 900 * p) for p in range(3)] for n in range(4)}),
        ("", "", 1, {"x" * 249: [(2147483647, 70_000), (0, 0)]}),
    ]:
        data = {t: [(p, _batch(rng, n)) for p, n in parts] for t, parts in topics.items()}
        ids = {t: uuid.UUID(bytes=rng.randbytes(16)) for t in topics}
        cases.append((client_id, txn_id, acks, rng.randrange(1 << 31), data, ids))
    return cases


@pytest.mark.parametrize("version", VERSIONS)
def test_frame_is_the_generated_codecs_bytes_and_chunks(impl, version):
    rng = random.Random(version)
    layout = wire.request_layout(version)
    assert layout is not None
    for client_id, txn_id, acks, timeout, data, ids in _requests(rng):
        request = wire.ProduceWire(txn_id, acks, timeout, data, ids)
        corr = rng.randrange(1 << 31)
        expected = frame_request(request.message(version), version, corr, client_id)
        topics = ([(ids[t].bytes, p) for t, p in data.items()] if layout["topic_ids"]
                  else list(data.items()))
        chunks = impl.frame_produce(version, corr, client_id, txn_id, acks, timeout, topics,
                                    **layout)
        # the same bytes, cut into the same chunks
        assert [bytes(c) for c in chunks] == [bytes(c) for c in expected]
        # batches of RECORDS_CHUNK_MIN bytes or more are the caller's objects, not copies
        big = [b for parts in data.values() for _, b in parts if len(b) >= layout["inline_below"]]
        assert [c for c in chunks if isinstance(c, bytes)] == big
        assert all(any(c is b for c in chunks) for b in big)


@pytest.mark.parametrize("version", VERSIONS)
def test_produce_wire_frame_uses_the_layout_of_each_version(version):
    rng = random.Random(100 + version)
    for client_id, txn_id, acks, timeout, data, ids in _requests(rng):
        request = wire.ProduceWire(txn_id, acks, timeout, data, ids)
        got = b"".join(bytes(c) for c in request.frame(version, 42, client_id))
        want = b"".join(bytes(c) for c in frame_request(request.message(version), version, 42,
                                                       client_id))
        assert got == want
        # and the generated decoder reads it back
        header = headers.request_header_version(0, version)
        assert header == (2 if version >= ProduceRequest.FLEXIBLE_MIN else 1)


def test_frame_refuses_bad_input(impl):
    layout = wire.request_layout(13)
    with pytest.raises(ValueError, match="a topic id is 16 bytes, not 3"):
        impl.frame_produce(13, 1, "c", None, -1, 1000, [(b"abc", [(0, b"x")])], **layout)
    layout = wire.request_layout(9)
    with pytest.raises(ValueError, match="topic name of 40000 bytes exceeds 32767"):
        impl.frame_produce(9, 1, "c", None, -1, 1000, [("t" * 40000, [(0, b"x")])], **layout)
    with pytest.raises(TypeError, match="topic name must be a str"):
        impl.frame_produce(9, 1, "c", None, -1, 1000, [(b"t", [(0, b"x")])], **layout)
    with pytest.raises(TypeError, match=r"\(partition, batch\) tuple"):
        impl.frame_produce(9, 1, "c", None, -1, 1000, [("t", [b"x"])], **layout)
    with pytest.raises(ValueError, match="header version 0"):
        impl.frame_produce(9, 1, "c", None, -1, 1000, [], **{**layout, "header_version": 0})


def _response(rng: random.Random, version: int, topics: int, parts: int) -> ProduceResponse:
    resp = R(throttle_time_ms=rng.randrange(1 << 31), responses=[
        R.TopicProduceResponse(
            name=f"topic-{t}-é", topic_id=uuid.UUID(bytes=rng.randbytes(16)),
            partition_responses=[R.PartitionProduceResponse(
                index=rng.randrange(1 << 31), base_offset=rng.randrange(-1, 1 << 62),
                log_append_time_ms=rng.choice([-1, rng.randrange(1 << 41)]),
                log_start_offset=rng.randrange(-1, 1 << 40)) for _ in range(parts)])
        for t in range(topics)])
    return fit(resp, version)


def _encode(resp: ProduceResponse, version: int) -> bytes:
    return resp.encode(version)


def _columns_of(resp: ProduceResponse, version: int) -> tuple:
    """What the parser must give for a response, read from the generated decoder's objects."""
    topics, rows = [], []
    for t, topic in enumerate(resp.responses):
        topics.append(topic.topic_id.bytes if version >= 13 else topic.name)
        for p in topic.partition_responses:
            rows.append((t, p.index, p.error_code, p.base_offset,
                         p.log_append_time_ms if version >= 2 else -1,
                         p.log_start_offset if version >= 5 else -1))
    return topics, rows, resp.throttle_time_ms


def _as_rows(cols: tuple) -> tuple:
    topics, *columns, throttle = cols
    return topics, list(zip(*columns, strict=True)), throttle


@pytest.mark.parametrize("version", VERSIONS)
def test_parsed_columns_equal_the_generated_decoder(impl, version):
    rng = random.Random(version)
    layout = wire.response_layout(version)
    assert layout is not None
    for topics, parts in [(0, 0), (1, 1), (1, 5), (3, 4), (2, 300)]:
        data = _encode(_response(rng, version, topics, parts), version)
        decoded = ProduceResponse.decode(data, version)
        cols = impl.parse_produce_response(data, **layout)
        assert cols is not None
        assert _as_rows(cols) == _columns_of(decoded, version)
        assert [c.typecode for c in cols[1:7]] == ["i", "i", "h", "q", "q", "q"]
        # bytes after the body are ignored, as by the generated decoder
        assert impl.parse_produce_response(data + b"\x07\x00", **layout) == cols


@pytest.mark.parametrize("version", VERSIONS)
def test_decode_produce_response_gives_columns_or_the_generated_response(version):
    rng = random.Random(7 * version)
    resp = _response(rng, version, 2, 3)
    res = wire.decode_produce_response(_encode(resp, version), version)
    assert isinstance(res, wire.ProduceResults)
    assert len(res) == 6 and res.throttle_time_ms == resp.throttle_time_ms
    assert list(res.base_offset) == [p.base_offset for t in resp.responses
                                     for p in t.partition_responses]
    resp.responses[1].partition_responses[2].error_code = 6
    res = wire.decode_produce_response(_encode(resp, version), version)
    assert isinstance(res, ProduceResponse)
    assert res.responses[1].partition_responses[2].error_code == 6


def _fallbacks(version: int) -> list[tuple[str, ProduceResponse]]:
    """Responses the columns cannot carry in ``version``."""
    rng = random.Random(version)
    out = []
    resp = _response(rng, version, 2, 2)
    resp.responses[1].partition_responses[0].error_code = 6
    out.append(("error code", resp))
    if version >= 8:
        resp = _response(rng, version, 1, 2)
        resp.responses[0].partition_responses[1].record_errors = [
            R.BatchIndexAndErrorMessage(batch_index=3, batch_index_error_message="bad")]
        out.append(("record errors", resp))
        resp = _response(rng, version, 1, 2)
        resp.responses[0].partition_responses[0].error_message = "message"
        out.append(("error message", resp))
    if version >= 10:
        resp = _response(rng, version, 1, 2)
        resp.responses[0].partition_responses[1].current_leader = R.LeaderIdAndEpoch(
            leader_id=2, leader_epoch=7)
        out.append(("current leader", resp))
        resp = _response(rng, version, 1, 1)
        resp.node_endpoints = [R.NodeEndpoint(node_id=2, host="h", port=9092, rack=None)]
        out.append(("node endpoints", resp))
    if version >= 9:
        resp = _response(rng, version, 2, 1)
        resp.responses[1].unknown_tagged_fields = [(5, b"xyz")]
        out.append(("topic tag", resp))
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_what_the_columns_cannot_carry_falls_back(impl, version):
    layout = wire.response_layout(version)
    for what, resp in _fallbacks(version):
        data = _encode(resp, version)
        assert impl.parse_produce_response(data, **layout) is None, what
        decoded = wire.decode_produce_response(data, version)
        assert isinstance(decoded, ProduceResponse), what


def test_null_arrays_fall_back(impl):
    # a null topics array (int32 -1) and, flexible, a null compact array (0)
    assert impl.parse_produce_response(b"\xff\xff\xff\xff\x00\x00\x00\x00",
                                       **wire.response_layout(8)) is None
    assert impl.parse_produce_response(b"\x00\x00\x00\x00\x00\x00",
                                       **wire.response_layout(9)) is None


@pytest.mark.parametrize("version", [3, 5, 8, 9, 10, 13])
def test_every_prefix_is_refused(impl, version):
    layout = wire.response_layout(version)
    data = _encode(_response(random.Random(version), version, 2, 3), version)
    for cut in range(len(data)):
        with pytest.raises(ValueError, match=r"malformed ProduceResponse: the body of \d+ bytes"):
            impl.parse_produce_response(data[:cut], **layout)
        with pytest.raises(ProtocolError):  # what the connection reports, as before
            wire.decode_produce_response(data[:cut], version)


def test_counts_larger_than_the_body_are_refused_before_allocating(impl):
    with pytest.raises(ValueError, match="array length larger than the bytes left"):
        impl.parse_produce_response(b"\x7f\xff\xff\xff" + bytes(20), **wire.response_layout(8))
    with pytest.raises(ValueError, match="array length larger than the bytes left"):
        impl.parse_produce_response(b"\x02\x02t\xff\xff\xff\xff\x0f" + bytes(20),
                                    **wire.response_layout(9))
    with pytest.raises(ValueError, match="varint longer than 32 bits"):
        impl.parse_produce_response(b"\xff\xff\xff\xff\x7f", **wire.response_layout(9))
    with pytest.raises(ValueError, match="negative string length"):
        impl.parse_produce_response(b"\x00\x00\x00\x01\xff\x00" + bytes(10),
                                    **wire.response_layout(5))
    with pytest.raises(ValueError, match="not UTF-8"):
        impl.parse_produce_response(b"\x00\x00\x00\x01\x00\x01\xff\x00\x00\x00\x00"
                                    b"\x00\x00\x00\x00", **wire.response_layout(5))


@pytest.mark.parametrize("version", [3, 5, 8, 9, 10, 12, 13])
def test_garbled_responses_agree_with_the_generated_decoder(impl, version):
    """Random flips, insertions and cuts of valid responses: the parser never crashes; when it
    gives columns the generated decoder reads the same fields, and when it refuses the bytes
    the generated decoder refuses them too."""
    rng = random.Random(1000 + version)
    layout = wire.response_layout(version)
    seeds = [_encode(_response(rng, version, t, p), version) for t, p in [(1, 1), (2, 3), (0, 0)]]
    seeds += [_encode(r, version) for _, r in _fallbacks(version)]
    for _ in range(1500):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            op = rng.randrange(4)
            at = rng.randrange(len(data) + 1)
            if op == 0 and data:
                data[min(at, len(data) - 1)] = rng.randrange(256)
            elif op == 1:
                data[at:at] = rng.randbytes(rng.randrange(1, 4))
            elif op == 2:
                del data[at:at + rng.randrange(1, 6)]
            else:
                data[at:at] = rng.choice([b"\xff", b"\x80\x80", b"\x7f\xff\xff\xff", b"\x00"])
        data = bytes(data)
        try:
            cols = impl.parse_produce_response(data, **layout)
        except ValueError as exc:
            assert "malformed ProduceResponse" in str(exc)
            with pytest.raises(ProtocolError):
                ProduceResponse.decode(data, version)
            continue
        if cols is not None:
            assert _as_rows(cols) == _columns_of(ProduceResponse.decode(data, version), version)


def test_the_twins_agree_on_garbled_bytes():
    impls = [p.values[0] for p in _impls()]
    if len(impls) < 2:
        pytest.skip("the compiled module is not built (python setup.py build_ext --inplace)")
    native, pure = impls
    rng = random.Random(5)
    for version in VERSIONS:
        layout = wire.response_layout(version)
        seed = _encode(_response(rng, version, 2, 2), version)
        for _ in range(200):
            data = bytearray(seed)
            data[rng.randrange(len(data))] = rng.randrange(256)
            data = bytes(data[:rng.randrange(len(data) + 1)] if rng.random() < 0.3 else data)
            outcomes = []
            for m in (native, pure):
                try:
                    outcomes.append(m.parse_produce_response(data, **layout))
                except ValueError as exc:
                    outcomes.append(str(exc))
            assert outcomes[0] == outcomes[1]


def test_nogil_bytes_gives_the_lock_up_only_from_that_size(impl):
    layout = wire.response_layout(9)
    data = _encode(_response(random.Random(1), 9, 1, 2), 9)
    before = impl.released_calls()
    impl.parse_produce_response(data, nogil_bytes=-1, **layout)
    impl.parse_produce_response(data, nogil_bytes=len(data) + 1, **layout)
    assert impl.released_calls() == before
    assert impl.parse_produce_response(data, nogil_bytes=len(data), **layout) is not None
    assert impl.released_calls() == before + 1
    req = wire.request_layout(9)
    chunks = impl.frame_produce(9, 1, "c", None, -1, 10, [("t", [(0, b"x" * 4096)])],
                                nogil_bytes=0, **req)
    assert impl.released_calls() == before + 2
    assert b"".join(bytes(c) for c in chunks) == b"".join(
        bytes(c) for c in wire.ProduceWire(None, -1, 10, {"t": [(0, b"x" * 4096)]}, {}).frame(
            9, 1, "c"))


def test_a_produce_response_captured_from_tansu(impl):
    """A real broker's bytes (tests/protocol/data, captured by capture_frames.py)."""
    import json
    facts = json.loads((DATA / "expected.json").read_text())["tansu_produce_v9"]
    frame = (DATA / "tansu_produce_v9.bin").read_bytes()
    version = facts["version"]
    _, offset = headers.decode_response_header(frame, headers.response_header_version(0, version))
    body = frame[offset:]
    cols = impl.parse_produce_response(body, **wire.response_layout(version))
    assert cols is not None
    assert _as_rows(cols) == _columns_of(ProduceResponse.decode(body, version), version)
    topics, rows, _ = _as_rows(cols)
    assert topics == [facts["topic"]]
    assert [(r[1], r[3]) for r in rows] == [(facts["partition"], facts["base_offset"])]
