"""SCRAM credentials: describe them (DescribeUserScramCredentials) and alter them
(AlterUserScramCredentials), with confluent-kafka's types and argument checks."""

from __future__ import annotations

import hashlib
import secrets
from concurrent.futures import Future
from enum import Enum
from typing import Any, cast

from ..errors import KafkaError
from ..net.client import KafkaClient
from ..protocol import messages as m
from .calls import ANY, CONTROLLER, AdminCall, error_of

_HASHES = {1: "sha256", 2: "sha512"}


class ScramMechanism(Enum):
    """SASL/SCRAM mechanisms (protocol values)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ScramMechanism):
            return NotImplemented
        return self.value < other.value


class ScramCredentialInfo:
    """Mechanism and iteration count of a SCRAM credential."""

    def __init__(self, mechanism: ScramMechanism, iterations: int) -> None:
        self.mechanism = mechanism
        self.iterations = iterations


class UserScramCredentialAlteration:
    """Base class of SCRAM credential alterations for ``user``."""

    def __init__(self, user: str) -> None:
        self.user = user


class UserScramCredentialUpsertion(UserScramCredentialAlteration):
    """Set ``user``'s credential for a mechanism from ``password`` (salted and hashed here;
    ``salt`` is random when None)."""

    def __init__(self, user: str, scram_credential_info: ScramCredentialInfo,
                 password: bytes, salt: bytes | None = None) -> None:
        super().__init__(user)
        self.scram_credential_info = scram_credential_info
        self.password = password
        self.salt = salt


class UserScramCredentialDeletion(UserScramCredentialAlteration):
    """Remove ``user``'s credential for ``mechanism``."""

    def __init__(self, user: str, mechanism: ScramMechanism) -> None:
        super().__init__(user)
        self.mechanism = mechanism


class UserScramCredentialsDescription:
    """A user's SCRAM credentials: mechanism and iterations of each."""

    def __init__(self, user: str, scram_credential_infos: list[ScramCredentialInfo]) -> None:
        self.user = user
        self.scram_credential_infos = scram_credential_infos


def check_users(users: Any) -> None:
    """confluent-kafka's checks of ``describe_user_scram_credentials(users)``."""
    if users is None:
        return
    if not isinstance(users, list):
        raise TypeError("Expected input to be list of String")
    for user in users:
        if user is None:
            raise TypeError("'user' cannot be None")
        if not isinstance(user, str):
            raise TypeError("Each value should be a string")
        if not user:
            raise ValueError("'user' cannot be empty")
    if len(set(users)) != len(users):
        raise ValueError("Duplicate users are not allowed")


def check_alterations(alterations: Any) -> None:
    """confluent-kafka's checks of ``alter_user_scram_credentials(alterations)``: TypeError
    or ValueError naming what is wrong. (The broker checks the iteration range.)"""
    if not isinstance(alterations, list):
        raise TypeError("Expected input to be list")
    if not alterations:
        raise ValueError("Expected at least one alteration")
    for a in alterations:
        if not isinstance(a, UserScramCredentialAlteration):
            raise TypeError("Expected each element of list to be subclass of "
                            "UserScramCredentialAlteration")
        if a.user is None:
            raise TypeError("'user' cannot be None")
        if not isinstance(a.user, str):
            raise TypeError("'user' must be a string")
        if not a.user:
            raise ValueError("'user' cannot be empty")
        if isinstance(a, UserScramCredentialUpsertion):
            if a.password is None:
                raise TypeError("'password' cannot be None")
            if not isinstance(a.password, bytes):
                raise TypeError("'password' must be bytes")
            if not a.password:
                raise ValueError("'password' cannot be empty")
            if a.salt is not None and not a.salt:
                raise ValueError("'salt' can be None but cannot be empty")
            if a.salt and not isinstance(a.salt, bytes):
                raise TypeError("'salt' must be bytes")
            info = a.scram_credential_info
            if not isinstance(info, ScramCredentialInfo):
                raise TypeError("Expected credential_info to be ScramCredentialInfo Type")
            if info.iterations < 1:
                raise ValueError("Iterations should be positive")
            _check_mechanism(info.mechanism, a.user)
        elif isinstance(a, UserScramCredentialDeletion):
            _check_mechanism(a.mechanism, a.user)
        else:
            raise TypeError("Expected each element of list 'alterations' to be either a "
                            "UserScramCredentialUpsertion or a UserScramCredentialDeletion")


def _check_mechanism(mechanism: Any, user: str) -> None:
    if not isinstance(mechanism, ScramMechanism):
        raise TypeError("Expected the mechanism to be ScramMechanism Type")
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError(f"SCRAM alteration for {user!r}: mechanism must be SCRAM_SHA_256 or "
                         "SCRAM_SHA_512")


def salted_password(mechanism: ScramMechanism, password: bytes | str, salt: bytes,
                    iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i) (RFC 5802), as the broker stores it."""
    if isinstance(password, str):
        password = password.encode("utf-8")
    return hashlib.pbkdf2_hmac(_HASHES[mechanism.value], password, salt, iterations)


def new_salt() -> bytes:
    return secrets.token_bytes(32)


def describe_credentials(client: KafkaClient, users: list[str] | None, timeout: float
                         ) -> Future | dict[str, Future]:
    """DescribeUserScramCredentials on any broker. ``users`` None: one Future of ``{user:
    UserScramCredentialsDescription}`` for every user (failing if any user failed); else
    ``{user: Future of UserScramCredentialsDescription}``."""
    R = m.DescribeUserScramCredentialsRequest
    key = _ALL if users is None else None
    items: list[str] = [_ALL] if users is None else list(users)

    def build(group: list[str]) -> Any:
        return R(users=None if key is _ALL else [R.UserName(name=u) for u in group])

    def parse(resp: Any, group: list[str]) -> dict[str, Any]:
        err = error_of(resp.error_code, resp.error_message)
        if err is not None:
            return dict.fromkeys(group, err)
        found: dict[str, Any] = {}
        for r in resp.results:
            uerr = error_of(r.error_code, r.error_message)
            found[r.user] = uerr if uerr is not None else UserScramCredentialsDescription(
                r.user, [ScramCredentialInfo(_mechanism(c.mechanism), c.iterations)
                         for c in r.credential_infos])
        if key is not _ALL:
            return found
        failed = [v for v in found.values() if isinstance(v, KafkaError)]
        return {_ALL: failed[0] if failed else found}

    futures = AdminCall(client, items, build, parse, lambda _: ANY, timeout).start()
    return futures[_ALL] if users is None else futures


_ALL = "*all users*"


def _mechanism(value: int) -> ScramMechanism:
    try:
        return ScramMechanism(value)
    except ValueError:
        return ScramMechanism.UNKNOWN


def alter_credentials(client: KafkaClient, alterations: list[UserScramCredentialAlteration],
                      timeout: float) -> dict[str, Future]:
    """AlterUserScramCredentials at the controller; ``{user: Future of None}``. Passwords
    are salted and hashed here (PBKDF2, as the broker stores them); only the salted
    password goes over the wire."""
    users = list(dict.fromkeys(a.user for a in alterations))
    R = m.AlterUserScramCredentialsRequest
    upsertions: dict[str, list[Any]] = {u: [] for u in users}
    deletions: dict[str, list[Any]] = {u: [] for u in users}
    for a in alterations:
        if isinstance(a, UserScramCredentialUpsertion):
            info = a.scram_credential_info
            salt = a.salt or new_salt()
            upsertions[a.user].append(R.ScramCredentialUpsertion(
                name=a.user, mechanism=info.mechanism.value, iterations=info.iterations,
                salt=salt, salted_password=salted_password(
                    info.mechanism, a.password, salt, info.iterations)))
        else:  # not an upsertion: a deletion (or a subclass with a ``mechanism``)
            mechanism = cast(UserScramCredentialDeletion, a).mechanism
            deletions[a.user].append(R.ScramCredentialDeletion(name=a.user,
                                                               mechanism=mechanism.value))

    def build(group: list[str]) -> Any:
        return R(deletions=[d for u in group for d in deletions[u]],
                 upsertions=[x for u in group for x in upsertions[u]])

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        return {r.user: error_of(r.error_code, r.error_message) for r in resp.results}

    return AdminCall(client, users, build, parse, lambda _: CONTROLLER, timeout).start()
