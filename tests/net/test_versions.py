"""Version negotiation: the versions both sides speak, computed without importing a message
class per API (a fresh process used to import all of them on its first connection)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

from harness import create_topic, unique_topic

from kafka_fast.net.versions import negotiate
from kafka_fast.protocol import API_KEYS, API_VERSIONS


def test_our_ranges_are_within_the_request_classes_ranges():
    # The highest can be below the class's (tests/protocol/test_client_apis.py: the client
    # negotiates only the versions its code fills).
    for key in (0, 1, 3, 18, 78):
        request = API_KEYS[key][0]
        low, high = API_VERSIONS[key]
        assert low == request.MIN_VERSION and low <= high <= request.MAX_VERSION
    assert set(API_VERSIONS) == set(API_KEYS)


def test_negotiate_takes_the_highest_common_version():
    entry = SimpleNamespace
    got = negotiate([entry(api_key=1, min_version=4, max_version=99),
                     entry(api_key=3, min_version=0, max_version=2),
                     entry(api_key=9999, min_version=0, max_version=5),
                     entry(api_key=18, min_version=50, max_version=60)], API_VERSIONS)
    assert got == {1: API_VERSIONS[1][1], 3: 2}  # unknown key and no overlap are left out


CHILD = """
import json, sys
from kafka_fast import Consumer, TopicPartition, OFFSET_BEGINNING, Producer
bootstrap, topic = sys.argv[1], sys.argv[2]
with Producer({"bootstrap.servers": bootstrap}) as p:
    p.produce(topic, b"v", b"k", partition=0)
    assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "versions-" + topic})
c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
msgs = []
while not msgs:
    msgs = c.consume(1, 10)
c.close()
print(json.dumps({"read": [msgs[0].key().decode(), msgs[0].value().decode(), msgs[0].offset()],
                  "modules": sorted(m for m in sys.modules
                                    if m.startswith("kafka_fast.protocol.messages."))}))
"""


def test_a_fresh_process_imports_only_the_messages_it_sends(broker):
    topic = unique_topic("versions")
    create_topic(broker, topic, 1)
    out = subprocess.run([sys.executable, "-c", CHILD, broker.bootstrap, topic],
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["read"] == ["k", "v", 0]
    names = {m.rsplit(".", 1)[1] for m in got["modules"]}
    assert {"api_versions_request", "produce_request", "fetch_response"} <= names
    assert "add_raft_voter_request" not in names
    assert len(names) < 30, sorted(names)
