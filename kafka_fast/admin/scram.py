"""SCRAM credential alterations (AlterUserScramCredentials), shaped like confluent-kafka's."""

from __future__ import annotations

import hashlib
import secrets
from enum import Enum

# Kafka accepts 4096..16384 iterations for SCRAM credentials.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
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


def check_alteration(a: UserScramCredentialAlteration) -> None:
    """Raise TypeError/ValueError naming what is wrong with one alteration."""
    if not isinstance(a, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
        raise TypeError("Expected UserScramCredentialUpsertion or UserScramCredentialDeletion, "
                        f"got {type(a).__name__}")
    if not isinstance(a.user, str) or not a.user:
        raise ValueError(f"SCRAM alteration: user must be a non-empty string, got {a.user!r}")
    mechanism = (a.scram_credential_info.mechanism
                 if isinstance(a, UserScramCredentialUpsertion) else a.mechanism)
    if not isinstance(mechanism, ScramMechanism) or mechanism is ScramMechanism.UNKNOWN:
        raise ValueError(f"SCRAM alteration for {a.user!r}: mechanism must be "
                         f"SCRAM_SHA_256 or SCRAM_SHA_512, got {mechanism!r}")
    if isinstance(a, UserScramCredentialUpsertion):
        iterations = a.scram_credential_info.iterations
        if not isinstance(iterations, int) or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"SCRAM upsertion for {a.user!r}: iterations must be "
                             f"{MIN_ITERATIONS}..{MAX_ITERATIONS}, got {iterations!r}")
        if not isinstance(a.password, (bytes, str)) or not a.password:
            raise ValueError(f"SCRAM upsertion for {a.user!r}: password must be non-empty bytes")


def salted_password(mechanism: ScramMechanism, password: bytes | str, salt: bytes,
                    iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i) (RFC 5802), as the broker stores it."""
    if isinstance(password, str):
        password = password.encode("utf-8")
    return hashlib.pbkdf2_hmac(_HASHES[mechanism.value], password, salt, iterations)


def new_salt() -> bytes:
    return secrets.token_bytes(32)
