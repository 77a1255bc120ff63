"""kafka_fast's AdminClient against confluent-kafka's, read from the installed confluent_kafka:
every public method with the same positional parameters and keywords, the same exported
names, result types with the same attributes, enums with the same values, and the same
exception types for the arguments confluent-kafka refuses at the call."""

from __future__ import annotations

import enum
import inspect
import re
import threading
import time
import types
import warnings

import confluent_kafka
import confluent_kafka.admin as ref_admin
import pytest
from confluent_kafka.cimpl import _AdminClientImpl
from harness.ports import free_port

import kafka_fast
import kafka_fast.admin as our_admin
from kafka_fast.errors import KafkaError

#: Deliberate differences, each explained. Keywords kafka_fast accepts beyond
#: confluent-kafka's (confluent-kafka raises TypeError for them):
EXTRA_KEYWORDS = {
    # The Java client's DescribeConfigsOptions: synonyms are asked for by default, as
    # librdkafka always asks; the documentation of each entry on request.
    "describe_configs": {"include_synonyms", "include_documentation"},
}
#: Enum members kafka_fast has beyond confluent-kafka's (protocol values it lacks).
EXTRA_MEMBERS = {
    "ResourceType": {"BROKER_LOGGER"},
    "ConfigSource": {"DYNAMIC_BROKER_LOGGER_CONFIG", "CLIENT_METRICS_CONFIG"},
}

_DOC_PARAM = re.compile(r":param\s+(?:[^:]*\s)?(\w+):")
_C_SIGNATURE = re.compile(r"py:function:: \w+\((.*)\)")


def _reference_parameters(name: str) -> tuple[list[str], set[str]]:
    """confluent-kafka's positional parameters (in order) and keyword names of a method:
    from its Python signature and ``:param`` docstring lines, or for methods implemented
    in C (and wrappers taking ``*args``) from the C docstring's ``py:function`` line."""
    method = getattr(ref_admin.AdminClient, name)
    try:
        params = list(inspect.signature(method).parameters.values())[1:]
    except ValueError:  # a C method
        params = None
    if params is None or any(p.kind == p.VAR_POSITIONAL for p in params):
        match = _C_SIGNATURE.search(getattr(_AdminClientImpl, name).__doc__)
        names = re.findall(r"(\w+)(?:=[^\],]*)?\]?", match.group(1))
        return names, set()
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = set(_DOC_PARAM.findall(method.__doc__ or "")) - set(positional)
    return positional, keywords


def _public_methods(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))


@pytest.mark.parametrize("name", _public_methods(ref_admin.AdminClient))
def test_every_method_has_confluent_kafkas_parameters(name):
    positional, keywords = _reference_parameters(name)
    ours = getattr(our_admin.AdminClient, name, None)
    assert ours is not None, f"AdminClient.{name} is missing"
    params = list(inspect.signature(ours).parameters.values())[1:]
    our_positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    our_keywords = {p.name for p in params if p.kind == p.KEYWORD_ONLY}
    assert our_positional == positional
    # confluent-kafka takes its options as keywords only: so does kafka_fast.
    assert keywords <= our_keywords, f"missing keywords: {keywords - our_keywords}"
    extra = our_keywords - keywords - EXTRA_KEYWORDS.get(name, set())
    for kw in sorted(extra):  # documented nowhere, but accepted by confluent-kafka's C layer
        assert _reference_accepts(name, kw), f"{name}({kw}=...) is not confluent-kafka's"
    assert not any(p.kind == p.VAR_KEYWORD for p in params), "no catch-all **kwargs"


#: Arguments confluent-kafka accepts at the call, to learn which keywords it accepts.
_SAMPLE_CALLS = {
    "describe_configs": lambda: ([ref_admin.ConfigResource("topic", "t")],),
    "alter_configs": lambda: ([ref_admin.ConfigResource("topic", "t", {"a": "b"})],),
    "incremental_alter_configs": lambda: ([ref_admin.ConfigResource("topic", "t", incremental_configs=[
        ref_admin.ConfigEntry("a", "b", incremental_operation=ref_admin.AlterConfigOpType.SET)])],),
}


def _reference_accepts(name: str, keyword: str) -> bool:
    client = ref_admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    args = _SAMPLE_CALLS[name]()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            getattr(client, name)(*args, **{keyword: 1})
    except TypeError as exc:
        return "keyword" not in str(exc)
    return True


def test_the_allow_list_is_still_needed():
    for name, keywords in EXTRA_KEYWORDS.items():
        for kw in keywords:
            assert not _reference_accepts(name, kw), f"confluent-kafka now has {name}({kw})"


def _public_names(module: types.ModuleType) -> set[str]:
    return {n for n, v in vars(module).items() if not n.startswith("_")
            and not isinstance(v, types.ModuleType) and getattr(v, "__module__", "") != "typing"
            and n not in ("Any", "Dict", "List", "Optional", "Set", "Tuple", "Union",
                          "string_type")}


def test_the_admin_module_exports_confluent_kafkas_names():
    missing = _public_names(ref_admin) - set(dir(our_admin))
    assert not missing


@pytest.mark.parametrize("name", ["Node", "TopicPartitionInfo", "TopicCollection",
                                  "ConsumerGroupState", "ConsumerGroupType", "IsolationLevel",
                                  "ElectionType", "ConsumerGroupTopicPartitions", "Uuid"])
def test_top_level_names(name):
    assert hasattr(confluent_kafka, name)
    assert getattr(kafka_fast, name) is getattr(our_admin, name)
    assert name in dir(kafka_fast)


def _enums(module) -> dict[str, type]:
    return {n: v for n, v in vars(module).items()
            if isinstance(v, type) and issubclass(v, enum.Enum) and not n.startswith("_")}


@pytest.mark.parametrize("name", sorted(_enums(ref_admin)) + [
    "ConsumerGroupState", "ConsumerGroupType", "IsolationLevel", "ElectionType"])
def test_enums_have_confluent_kafkas_members_and_values(name):
    theirs = getattr(confluent_kafka, name, None) or getattr(ref_admin, name)
    ours = getattr(our_admin, name)
    their_members = {m: v.value for m, v in theirs.__members__.items()}
    our_members = {m: v.value for m, v in ours.__members__.items()}
    assert {m: our_members.get(m) for m in their_members} == their_members
    assert set(our_members) - set(their_members) == EXTRA_MEMBERS.get(name, set())
    try:
        sorted(theirs)
    except TypeError:
        return  # confluent-kafka's enum does not sort either
    members = list(ours)
    assert sorted(members, reverse=True) == sorted(members, key=lambda m: -m.value)


def _init_parameters(cls: type) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in
            list(inspect.signature(cls.__init__).parameters.values())[1:]]


RESULT_TYPES = ["ConsumerGroupListing", "ListConsumerGroupsResult", "MemberAssignment",
                "MemberDescription", "ConsumerGroupDescription", "TopicDescription",
                "DescribeClusterResult", "ListOffsetsResultInfo", "DeletedRecords",
                "UserScramCredentialsDescription", "ScramCredentialInfo", "AclBinding",
                "AclBindingFilter", "UserScramCredentialUpsertion",
                "UserScramCredentialDeletion", "ConfigEntry", "ConfigResource"]
MODEL_TYPES = ["Node", "TopicPartitionInfo", "TopicCollection", "ConsumerGroupTopicPartitions"]


@pytest.mark.parametrize("name", RESULT_TYPES + MODEL_TYPES)
def test_types_take_confluent_kafkas_parameters(name):
    theirs = getattr(ref_admin, name, None) or getattr(confluent_kafka, name)
    ours = getattr(our_admin, name)
    their_params = _init_parameters(theirs)
    our_params = _init_parameters(ours)
    assert [n for n, _ in our_params] == [n for n, _ in their_params]
    for (n, ours_default), (_, their_default) in zip(our_params, their_params, strict=True):
        if isinstance(their_default, dict | list):  # a shared mutable default over there
            their_default = None
        if isinstance(their_default, enum.Enum):
            assert (ours_default.name, ours_default.value) == (
                their_default.name, their_default.value), n
        elif their_default is not inspect.Parameter.empty and ours_default is not None:
            assert ours_default == their_default, n


def _same_values(lib_admin, lib_top, which: str) -> object:
    """One object of type ``which`` built the same way from either library."""
    a, k = lib_admin, lib_top
    node = k.Node(1, "h", 9092, "r")
    tp = k.TopicPartition("t", 1)
    return {
        "Node": lambda: node,
        "TopicPartitionInfo": lambda: k.TopicPartitionInfo(0, node, [node], [node]),
        "TopicCollection": lambda: k.TopicCollection(["t"]),
        "ConsumerGroupTopicPartitions": lambda: k.ConsumerGroupTopicPartitions("g", [tp]),
        "ConsumerGroupListing": lambda: a.ConsumerGroupListing("g", False, "STABLE", 2),
        "MemberDescription": lambda: a.MemberDescription(
            "m", "c", "h", a.MemberAssignment([tp]), "i", a.MemberAssignment([])),
        "ConsumerGroupDescription": lambda: a.ConsumerGroupDescription(
            "g", False, [], "range", 3, node, ["READ", 8], "CLASSIC"),
        "DescribeClusterResult": lambda: a.DescribeClusterResult(node, [node], "id", [7]),
        "ListOffsetsResultInfo": lambda: a.ListOffsetsResultInfo(5, -1, -1),
        "AclBinding": lambda: a.AclBinding("topic", "t", "literal", "User:u", "*", "read",
                                           "allow"),
    }[which]()


@pytest.mark.parametrize("which", ["Node", "TopicPartitionInfo", "TopicCollection",
                                   "ConsumerGroupTopicPartitions", "ConsumerGroupListing",
                                   "MemberDescription", "ConsumerGroupDescription",
                                   "DescribeClusterResult", "ListOffsetsResultInfo",
                                   "AclBinding"])
def test_types_have_confluent_kafkas_attributes(which):
    theirs = _same_values(ref_admin, confluent_kafka, which)
    ours = _same_values(our_admin, kafka_fast, which)
    their_attrs = {n: v for n, v in vars(theirs).items() if not n.startswith("_")}
    our_attrs = {n: v for n, v in vars(ours).items() if not n.startswith("_")}
    assert set(our_attrs) == set(their_attrs)
    for n, v in their_attrs.items():
        if isinstance(v, enum.Enum):
            assert (type(our_attrs[n]).__name__, our_attrs[n].name, our_attrs[n].value) == (
                type(v).__name__, v.name, v.value), n
        elif isinstance(v, (str, int, bool, type(None))):
            assert our_attrs[n] == v, n
        elif isinstance(v, list) and all(isinstance(x, enum.Enum) for x in v):
            assert [(x.name, x.value) for x in our_attrs[n]] == [(x.name, x.value) for x in v]
    assert str(ours) == str(theirs) if which in ("Node", "AclBinding") else True


def test_offset_spec_values():
    for name in ("earliest", "latest", "max_timestamp"):
        assert getattr(our_admin.OffsetSpec, name)()._value == \
            getattr(ref_admin.OffsetSpec, name)()._value
    assert our_admin.OffsetSpec.for_timestamp(123)._value == 123
    assert our_admin.OffsetSpec(-2) is our_admin.OffsetSpec.earliest()
    assert our_admin.OffsetSpec(55).timestamp == ref_admin.OffsetSpec(55).timestamp


def test_uuid_prints_as_kafka_does():
    for msb, lsb in [(123, 456), (-1, 7), (2**62, -(2**63))]:
        ours, theirs = kafka_fast.Uuid(msb, lsb), confluent_kafka.Uuid(msb, lsb)
        assert str(ours) == str(theirs)
        assert ours.get_most_significant_bits() == theirs.get_most_significant_bits()
        assert ours.get_least_significant_bits() == theirs.get_least_significant_bits()
    assert kafka_fast.Uuid(1, 2) == kafka_fast.Uuid(1, 2)


def _lib(admin_module, top):
    return types.SimpleNamespace(a=admin_module, k=top, TP=top.TopicPartition)


#: Arguments confluent-kafka refuses at the call: kafka_fast raises the same exception type.
BAD_CALLS = {
    "create_topics []": lambda L, c: c.create_topics([]),
    "delete_topics []": lambda L, c: c.delete_topics([]),
    "describe_configs str": lambda L, c: c.describe_configs(["x"]),
    "describe_configs []": lambda L, c: c.describe_configs([]),
    "incremental_alter_configs str": lambda L, c: c.incremental_alter_configs(["x"]),
    "incremental_alter_configs []": lambda L, c: c.incremental_alter_configs([]),
    "incremental_alter_configs no entries": lambda L, c: c.incremental_alter_configs(
        [L.a.ConfigResource("topic", "a")]),
    "incremental_alter_configs no op": lambda L, c: c.incremental_alter_configs(
        [L.a.ConfigResource("topic", "a", incremental_configs=[L.a.ConfigEntry("x", "1")])]),
    "alter_configs str": lambda L, c: c.alter_configs(["x"]),
    "alter_configs []": lambda L, c: c.alter_configs([]),
    "create_acls []": lambda L, c: c.create_acls([]),
    "create_acls str": lambda L, c: c.create_acls(["x"]),
    "describe_acls binding": lambda L, c: c.describe_acls(L.a.AclBinding(
        "topic", "t", "literal", "User:a", "*", "read", "allow")),
    "describe_acls str": lambda L, c: c.describe_acls("x"),
    "delete_acls []": lambda L, c: c.delete_acls([]),
    "delete_acls binding": lambda L, c: c.delete_acls([L.a.AclBinding(
        "topic", "t", "literal", "User:a", "*", "read", "allow")]),
    "AclBinding name int": lambda L, c: L.a.AclBinding(
        "topic", 1, "literal", "User:a", "*", "read", "allow"),
    "AclBinding ANY": lambda L, c: L.a.AclBinding(
        "any", "t", "literal", "User:a", "*", "read", "allow"),
    "AclBinding None name": lambda L, c: L.a.AclBinding(
        "topic", None, "literal", "User:a", "*", "read", "allow"),
    "AclBinding bad name": lambda L, c: L.a.AclBinding(
        "nonsense", "t", "literal", "User:a", "*", "read", "allow"),
    "AclBinding float": lambda L, c: L.a.AclBinding(
        1.5, "t", "literal", "User:a", "*", "read", "allow"),
    "AclBindingFilter UNKNOWN": lambda L, c: L.a.AclBindingFilter(
        "unknown", None, "any", None, None, "any", "any"),
    "list_consumer_groups states list": lambda L, c: c.list_consumer_groups(
        states=[L.k.ConsumerGroupState.STABLE]),
    "list_consumer_groups states str": lambda L, c: c.list_consumer_groups(states={"x"}),
    "list_consumer_groups types list": lambda L, c: c.list_consumer_groups(types=[1]),
    "list_consumer_groups bogus": lambda L, c: c.list_consumer_groups(bogus=1),
    "describe_consumer_groups str": lambda L, c: c.describe_consumer_groups("g"),
    "describe_consumer_groups []": lambda L, c: c.describe_consumer_groups([]),
    "delete_consumer_groups int": lambda L, c: c.delete_consumer_groups([1]),
    "delete_consumer_groups []": lambda L, c: c.delete_consumer_groups([]),
    "list_consumer_group_offsets []": lambda L, c: c.list_consumer_group_offsets(
        [L.k.ConsumerGroupTopicPartitions("a", [])]),
    "list_consumer_group_offsets offset": lambda L, c: c.list_consumer_group_offsets(
        [L.k.ConsumerGroupTopicPartitions("a", [L.TP("t", 0, 5)])]),
    "list_consumer_group_offsets empty group": lambda L, c: c.list_consumer_group_offsets(
        [L.k.ConsumerGroupTopicPartitions("")]),
    "list_consumer_group_offsets not a list": lambda L, c: c.list_consumer_group_offsets(
        L.k.ConsumerGroupTopicPartitions("a")),
    "alter_consumer_group_offsets None": lambda L, c: c.alter_consumer_group_offsets(
        [L.k.ConsumerGroupTopicPartitions("a")]),
    "alter_consumer_group_offsets negative": lambda L, c: c.alter_consumer_group_offsets(
        [L.k.ConsumerGroupTopicPartitions("a", [L.TP("t", 0, -1)])]),
    "list_offsets list": lambda L, c: c.list_offsets([L.TP("t", 0)]),
    "list_offsets int spec": lambda L, c: c.list_offsets({L.TP("t", 0): 5}),
    "list_offsets negative partition": lambda L, c: c.list_offsets(
        {L.TP("t", -1): L.a.OffsetSpec.latest()}),
    "list_offsets isolation int": lambda L, c: c.list_offsets(
        {L.TP("t", 0): L.a.OffsetSpec.latest()}, isolation_level=1),
    "delete_records not a list": lambda L, c: c.delete_records(L.TP("t", 0, 1)),
    "delete_records negative partition": lambda L, c: c.delete_records([L.TP("t", -1, 1)]),
    "describe_topics list": lambda L, c: c.describe_topics(["t"]),
    "describe_topics int": lambda L, c: c.describe_topics(L.k.TopicCollection([1])),
    "describe_topics empty name": lambda L, c: c.describe_topics(L.k.TopicCollection([""])),
    "describe_user_scram_credentials str": lambda L, c: c.describe_user_scram_credentials("a"),
    "alter_user_scram_credentials str password": lambda L, c: c.alter_user_scram_credentials(
        [L.a.UserScramCredentialUpsertion("u", L.a.ScramCredentialInfo(
            L.a.ScramMechanism.SCRAM_SHA_256, 4096), "p")]),
    "alter_user_scram_credentials []": lambda L, c: c.alter_user_scram_credentials([]),
    "alter_user_scram_credentials 0 iterations": lambda L, c: c.alter_user_scram_credentials(
        [L.a.UserScramCredentialUpsertion("u", L.a.ScramCredentialInfo(
            L.a.ScramMechanism.SCRAM_SHA_256, 0), b"p")]),
    "elect_leaders int": lambda L, c: c.elect_leaders(0),
    "elect_leaders negative": lambda L, c: c.elect_leaders(
        L.k.ElectionType.PREFERRED, [L.TP("t", -1)]),
    "describe_cluster bogus": lambda L, c: c.describe_cluster(bogus=1),
    "create_topics bogus": lambda L, c: c.create_topics([L.a.NewTopic("x", 1, 1)], bogus=1),
    "poll without timeout": lambda L, c: c.poll(),
    "describe_configs positional timeout": lambda L, c: c.describe_configs(
        [L.a.ConfigResource("topic", "a")], 10),
}


@pytest.fixture(scope="module")
def clients():
    port = free_port()
    theirs = ref_admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    ours = our_admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{port}",
                                  "request.timeout.ms": 1000})
    yield theirs, ours
    ours.close()


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_arguments_raise_what_confluent_kafka_raises(clients, case):
    theirs, ours = clients
    call = BAD_CALLS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises((TypeError, ValueError)) as expected:
            call(_lib(ref_admin, confluent_kafka), theirs)
        with pytest.raises(expected.type):
            call(_lib(our_admin, kafka_fast), ours)


def test_poll_serves_events_on_the_calling_thread_and_counts_them():
    calls = []
    # Short reconnect backoffs: connection failures keep coming while the test sleeps.
    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}", "request.timeout.ms": 1000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
            "error_cb": lambda err: calls.append((err.code(), threading.current_thread()))}
    with our_admin.AdminClient(conf) as admin:
        served = admin.poll(0)  # from now on only poll() serves events
        first = len(calls) - served  # served by the client's thread before that
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(calls) - first < 2:
            served += admin.poll(0.2)
        assert served == len(calls) - first >= 2
        assert {c for c, _ in calls[first:]} <= {KafkaError._TRANSPORT,
                                                 KafkaError._ALL_BROKERS_DOWN}
        assert {t for _, t in calls[first:]} == {threading.current_thread()}
        before = len(calls)
        # A request keeps the client dialling; its failures wait for poll().
        pending = admin.describe_cluster(request_timeout=3)
        time.sleep(1.5)
        assert len(calls) == before
        assert admin.poll(0) >= 1
        assert len(calls) > before
        assert pending.exception(10) is not None


#: One call of each kind of operation, for the bounded-wait test.
EVERY_OPERATION = {
    "create_topics": lambda a, k: a.create_topics([our_admin.NewTopic("t", 1, 1)],
                                                  request_timeout=1),
    "describe_configs": lambda a, k: a.describe_configs(
        [our_admin.ConfigResource("topic", "t")], request_timeout=1),
    "list_consumer_groups": lambda a, k: a.list_consumer_groups(request_timeout=1),
    "describe_consumer_groups": lambda a, k: a.describe_consumer_groups(
        ["g"], request_timeout=1),
    "delete_consumer_groups": lambda a, k: a.delete_consumer_groups(["g"], request_timeout=1),
    "list_consumer_group_offsets": lambda a, k: a.list_consumer_group_offsets(
        [k.ConsumerGroupTopicPartitions("g")], request_timeout=1),
    "alter_consumer_group_offsets": lambda a, k: a.alter_consumer_group_offsets(
        [k.ConsumerGroupTopicPartitions("g", [k.TopicPartition("t", 0, 1)])],
        request_timeout=1),
    "list_offsets": lambda a, k: a.list_offsets(
        {k.TopicPartition("t", 0): our_admin.OffsetSpec.latest()}, request_timeout=1),
    "delete_records": lambda a, k: a.delete_records([k.TopicPartition("t", 0, 1)],
                                                    request_timeout=1),
    "describe_cluster": lambda a, k: a.describe_cluster(request_timeout=1),
    "describe_topics": lambda a, k: a.describe_topics(k.TopicCollection(["t"]),
                                                      request_timeout=1),
    "describe_acls": lambda a, k: a.describe_acls(our_admin.AclBindingFilter(
        "any", None, "any", None, None, "any", "any"), request_timeout=1),
    "elect_leaders": lambda a, k: a.elect_leaders(k.ElectionType.PREFERRED,
                                                  request_timeout=1),
    "describe_user_scram_credentials": lambda a, k: a.describe_user_scram_credentials(
        request_timeout=1),
}


@pytest.mark.parametrize("name", sorted(EVERY_OPERATION))
def test_no_broker_fails_every_future_by_its_deadline(name):
    """With nothing listening, each Future fails with a KafkaException by the request
    time-out (1 s here; generous slack for a loaded machine), never later."""
    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}", "request.timeout.ms": 30000,
            "retry.backoff.ms": 50}
    with our_admin.AdminClient(conf) as admin:
        started = time.monotonic()
        result = EVERY_OPERATION[name](admin, kafka_fast)
        futures = list(result.values()) if isinstance(result, dict) else [result]
        assert futures
        for fut in futures:
            with pytest.raises(kafka_fast.KafkaException) as info:
                fut.result(15)
            assert info.value.args[0].code() in (
                KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
        assert time.monotonic() - started < 10


def test_close_fails_what_is_outstanding_and_refuses_new_calls():
    admin = our_admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{free_port()}"})
    pending = admin.describe_cluster(request_timeout=60)
    admin.close()
    with pytest.raises(kafka_fast.KafkaException) as info:
        pending.result(10)
    assert info.value.args[0].code() in (KafkaError._DESTROY, KafkaError._TRANSPORT)
    with pytest.raises(RuntimeError, match="closed"):
        admin.describe_cluster()
    with pytest.raises(RuntimeError, match="closed"):
        admin.poll(0)


DUPLICATES = {
    "describe_consumer_groups": lambda a, k: a.describe_consumer_groups(["g", "g"]),
    "delete_consumer_groups": lambda a, k: a.delete_consumer_groups(["g", "g"]),
    "list_consumer_group_offsets": lambda a, k: a.list_consumer_group_offsets(
        [k.ConsumerGroupTopicPartitions("g"), k.ConsumerGroupTopicPartitions("g")]),
    "alter_consumer_group_offsets": lambda a, k: a.alter_consumer_group_offsets(
        [k.ConsumerGroupTopicPartitions("g", [k.TopicPartition("t", 0, 1),
                                              k.TopicPartition("t", 0, 2)])]),
    "delete_records": lambda a, k: a.delete_records([k.TopicPartition("t", 0, 1),
                                                     k.TopicPartition("t", 0, 2)]),
    "describe_topics": lambda a, k: a.describe_topics(k.TopicCollection(["t", "t"])),
    "describe_configs": lambda a, k: a.describe_configs(
        [our_admin.ConfigResource("topic", "t"), our_admin.ConfigResource("TOPIC", "t")]),
    "describe_user_scram_credentials": lambda a, k: a.describe_user_scram_credentials(
        ["u", "u"]),
    "create_acls": lambda a, k: a.create_acls([our_admin.AclBinding(
        "topic", "t", "literal", "User:u", "*", "read", "allow")] * 2),
    "elect_leaders": lambda a, k: a.elect_leaders(
        k.ElectionType.PREFERRED, [k.TopicPartition("t", 0), k.TopicPartition("t", 0)]),
}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_duplicates_are_refused_at_the_call(clients, name):
    """A deliberate difference: confluent-kafka fails the futures of a request naming an
    entry twice; kafka_fast says so at once."""
    _, ours = clients
    with pytest.raises(ValueError, match="(?i)duplicate"):
        DUPLICATES[name](ours, kafka_fast)
