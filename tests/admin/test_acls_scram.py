"""ACLs and SCRAM users on Apache Kafka's secure listener (StandardAuthorizer): ACLs created
for the user without any change what that user may do, and are described and deleted;
SCRAM credentials are described, created (a new user logs in) and removed."""

from __future__ import annotations

import pytest
from admin_support import admin_for, produce, read, wait_for
from confluent_kafka import KafkaException as ReferenceException
from confluent_kafka.admin import AclBindingFilter as RefFilter
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from harness import create_topic, unique_topic

from kafka_fast import TopicCollection
from kafka_fast.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(120)
USER = "User:noaccess"


def _outcome(fut):
    try:
        return fut.result(30)
    except (KafkaException, ReferenceException) as exc:
        return exc.args[0].code()


def _acl_view(bindings) -> list[tuple]:
    return sorted((b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host,
                   b.operation.name, b.permission_type.name) for b in bindings)


def _topic_access(view, topic: str):
    """What ``view``'s user gets from describe_topics: the topic's authorized operations,
    or the error code."""
    with admin_for(view) as admin:
        fut = admin.describe_topics(TopicCollection([topic]),
                                    include_authorized_operations=True)[topic]
        got = _outcome(fut)
    return got if isinstance(got, int) else [op.name for op in got.authorized_operations]


def test_acls_for_a_user_are_created_described_used_and_deleted(apache_kafka):
    topic, prefix = unique_topic("acl-t"), unique_topic("acl-g")
    create_topic(apache_kafka, topic, 1)
    records = produce(apache_kafka, topic, [(0, b"r%d" % i, 1000 + i) for i in range(3)])
    noaccess = apache_kafka.as_user("noaccess")
    assert _topic_access(noaccess, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    bindings = [
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, USER, "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        AclBinding("topic", topic, "literal", USER, "*", "read", "allow"),
        AclBinding(ResourceType.GROUP, prefix, ResourcePatternType.PREFIXED, USER, "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
    ]
    with admin_for(apache_kafka) as admin:
        created = admin.create_acls(bindings)
        assert list(created) == bindings
        assert [f.result(30) for f in created.values()] == [None, None, None]

        on_topic = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                                    None, None, AclOperation.ANY, AclPermissionType.ANY)
        on_groups = AclBindingFilter(ResourceType.GROUP, prefix + "-member",
                                     ResourcePatternType.MATCH, USER, None, AclOperation.ANY,
                                     AclPermissionType.ANY)
        # The broker's authorizer applies new ACLs from the metadata log a moment after
        # CreateAcls is answered: described until they are there, then compared exactly.
        wait_for(lambda: len(admin.describe_acls(on_topic).result(30)) == 2
                 and len(admin.describe_acls(on_groups).result(30)) == 1, 30,
                 "the ACLs being described")
        assert _acl_view(admin.describe_acls(on_topic).result(30)) == _acl_view(bindings[:2])
        assert _acl_view(admin.describe_acls(on_groups).result(30)) == _acl_view(bindings[2:])
        reference = ReferenceAdmin(apache_kafka.client_config())
        theirs = reference.describe_acls(RefFilter(
            "topic", topic, "literal", None, None, "any", "any")).result(30)
        assert _acl_view(theirs) == _acl_view(bindings[:2])

        # The user may now do what the ACLs allow.
        wait_for(lambda: _topic_access(noaccess, topic) == ["READ", "DESCRIBE"], 30,
                 "the ACLs taking effect")
        got = read(noaccess, topic, 3, {"group.id": prefix + "-member",
                                        "auto.offset.reset": "earliest"})
        assert got == records

        deleted = admin.delete_acls([on_topic, on_groups])
        assert list(deleted) == [on_topic, on_groups]
        assert _acl_view(deleted[on_topic].result(30)) == _acl_view(bindings[:2])
        assert _acl_view(deleted[on_groups].result(30)) == _acl_view(bindings[2:])
        # and removes deleted ones a moment after DeleteAcls is answered
        wait_for(lambda: admin.describe_acls(on_topic).result(30) == [], 30,
                 "the deleted ACLs leaving the descriptions")
    wait_for(lambda: _topic_access(noaccess, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
             30, "the ACLs being gone")


def test_acl_errors_per_binding(apache_kafka):
    good = AclBinding(ResourceType.TOPIC, unique_topic("acl-ok"), ResourcePatternType.LITERAL,
                      USER, "*", AclOperation.WRITE, AclPermissionType.DENY)
    bad = AclBinding(ResourceType.TOPIC, unique_topic("acl-bad"), ResourcePatternType.LITERAL,
                     "noaccess", "*", AclOperation.WRITE, AclPermissionType.DENY)
    with admin_for(apache_kafka) as admin:
        futures = admin.create_acls([good, bad])
        ours = [_outcome(f) for f in futures.values()]
        (cleanup,) = admin.delete_acls([AclBindingFilter(
            ResourceType.TOPIC, good.name, ResourcePatternType.LITERAL, None, None,
            AclOperation.ANY, AclPermissionType.ANY)]).values()
        assert _acl_view(cleanup.result(30)) == _acl_view([good])
    assert ours[0] is None
    assert isinstance(ours[1], int) and ours[1] != 0
    from confluent_kafka.admin import AclBinding as RefBinding
    reference = ReferenceAdmin(apache_kafka.client_config())
    (theirs,) = reference.create_acls([RefBinding(
        "topic", bad.name, "literal", "noaccess", "*", "write", "deny")]).values()
    assert _outcome(theirs) == ours[1]
    # As a user without ALTER on the cluster, every binding is refused.
    with admin_for(apache_kafka.as_user("noaccess")) as admin:
        (fut,) = admin.create_acls([good]).values()
        assert _outcome(fut) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        denied = admin.describe_acls(AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY))
        assert _outcome(denied) == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def _credentials(desc: UserScramCredentialsDescription) -> list[tuple[str, int]]:
    return sorted((i.mechanism.name, i.iterations) for i in desc.scram_credential_infos)


def test_scram_credentials_are_described(apache_kafka):
    reference = ReferenceAdmin(apache_kafka.client_config())
    with admin_for(apache_kafka) as admin:
        everyone = admin.describe_user_scram_credentials().result(30)
        some = admin.describe_user_scram_credentials(["alice", "nobody-here"])
        assert list(some) == ["alice", "nobody-here"]
        alice = some["alice"].result(30)
        missing = _outcome(some["nobody-here"])
    both = [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 4096)]
    assert {u: _credentials(d) for u, d in everyone.items()
            if u in ("admin", "alice", "noaccess")} == dict.fromkeys(
                ("admin", "alice", "noaccess"), both)
    assert alice.user == "alice" and _credentials(alice) == both
    assert missing == KafkaError.RESOURCE_NOT_FOUND
    theirs = reference.describe_user_scram_credentials().result(30)
    assert {u: _credentials(d) for u, d in theirs.items()} == {
        u: _credentials(d) for u, d in everyone.items()}


def test_a_new_scram_user_logs_in_until_removed(apache_kafka):
    user, password = unique_topic("carol"), "carol-secret"
    with admin_for(apache_kafka) as admin:
        futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode(),
            b"a-salt-of-ours")])
        assert list(futures) == [user]
        assert futures[user].result(30) is None
        desc = admin.describe_user_scram_credentials([user])[user].result(30)
        assert _credentials(desc) == [("SCRAM_SHA_512", 8192)]
        # The broker checks the iteration count (4096 at least).
        (weak,) = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"x")]).values()
        assert _outcome(weak) == KafkaError.UNACCEPTABLE_CREDENTIAL

        view = apache_kafka.as_user(user, "SCRAM-SHA-512", password)

        def logs_in() -> bool:
            with admin_for(view, {"request.timeout.ms": 3000}) as as_user:
                return as_user.describe_cluster().result(10).cluster_id is not None

        wait_for(logs_in, 30, f"{user} logging in")
        (removed,) = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
            user, ScramMechanism.SCRAM_SHA_512)]).values()
        assert removed.result(30) is None
        # The broker's metadata cache learns of the deletion a moment after the controller.
        wait_for(lambda: _outcome(admin.describe_user_scram_credentials([user])[user]) ==
                 KafkaError.RESOURCE_NOT_FOUND, 10, f"{user}'s credential gone")
