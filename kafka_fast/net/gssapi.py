"""SASL GSSAPI (Kerberos V5, RFC 4752) as Kafka brokers speak it, through the optional
``gssapi`` package (python-gssapi, MIT or Heimdal Kerberos underneath).

The exchange: the security-context tokens travel in SaslAuthenticate frames until the
context is established (an empty client message acknowledges the server's last token);
then the server sends a wrapped 4-byte message offering security layers, and the client
answers with a wrapped "no security layer" choice and an empty authorization id.

Credentials: with ``sasl.kerberos.keytab`` the client principal's credentials are acquired
from the keytab into a memory credential cache of this login (no ``kinit`` process, nothing
written to the user's credential cache); without it, the default credential cache
(``KRB5CCNAME``, filled by ``kinit``) is used.
"""

from __future__ import annotations

import itertools
from typing import Any

#: RFC 4752: bit 1 of the server's offer / the client's choice means "no security layer".
NO_SECURITY_LAYER = 1
_ccache_ids = itertools.count(1)


class GssapiError(Exception):
    """Kerberos refused to start or continue the exchange (the message says why)."""


def _gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise GssapiError(
            "sasl.mechanism=GSSAPI needs the 'gssapi' package (the kerberos extra: pip install "
            "gssapi; it builds against the system's Kerberos, e.g. Debian's libkrb5-dev)") from None
    return gssapi


class GssapiMechanism:
    """One GSSAPI login to the broker at ``host`` (its service principal is
    ``service/host``)."""

    name = "GSSAPI"

    def __init__(self, service: str, host: str, principal: str = "",
                 keytab: str = "") -> None:
        gssapi = _gssapi()
        self._gssapi = gssapi
        try:
            creds = None
            if keytab:
                store = {"client_keytab": keytab,
                         "ccache": f"MEMORY:kafka_fast-{id(self)}-{next(_ccache_ids)}"}
                name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) \
                    if principal else None
                creds = gssapi.Credentials(name=name, usage="initiate", store=store)
            target = gssapi.Name(f"{service}@{host}", gssapi.NameType.hostbased_service)
            self._ctx = gssapi.SecurityContext(name=target, creds=creds, usage="initiate")
        except gssapi.exceptions.GSSError as exc:
            raise GssapiError(f"GSSAPI: {_reason(exc)}") from None
        self._phase = "context"

    def start(self) -> bytes:
        return self._token(None)

    def _token(self, server: bytes | None) -> bytes:
        try:
            out = self._ctx.step(server)
        except self._gssapi.exceptions.GSSError as exc:
            raise GssapiError(f"GSSAPI: {_reason(exc)}") from None
        if self._ctx.complete:
            self._phase = "layers"
        return out or b""

    def step(self, server_bytes: bytes) -> bytes | None:
        if self._phase == "context":
            return self._token(server_bytes)
        if self._phase == "layers":
            try:
                offer = self._ctx.unwrap(server_bytes).message
            except self._gssapi.exceptions.GSSError as exc:
                raise GssapiError(f"GSSAPI: bad security-layer message: {_reason(exc)}") \
                    from None
            if len(offer) != 4:
                raise GssapiError(f"GSSAPI: security-layer message of {len(offer)} bytes, "
                                  "not 4")
            if not offer[0] & NO_SECURITY_LAYER:
                raise GssapiError("GSSAPI: the broker requires a security layer (only "
                                  "'no security layer' is supported)")
            self._phase = "done"
            choice = bytes([NO_SECURITY_LAYER, 0, 0, 0])  # and an empty authorization id
            return self._ctx.wrap(choice, False).message
        if server_bytes:
            raise GssapiError("GSSAPI: unexpected server message after the exchange")
        return None


def _reason(exc: Any) -> str:
    return " ".join(str(exc).split())
