"""TLS client context from the ``ssl.*`` configuration keys."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from . import openssl
from .tls_keys import load_identity, load_trust


def uses_tls(config: Mapping[str, Any]) -> bool:
    return config["security.protocol"] in ("SSL", "SASL_SSL")


def uses_sasl(config: Mapping[str, Any]) -> bool:
    return config["security.protocol"] in ("SASL_PLAINTEXT", "SASL_SSL")


def make_ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """An ``SSLContext`` verifying brokers against the configured CAs (see ``tls_keys``).

    Host names are checked when ``ssl.endpoint.identification.algorithm`` is ``https``;
    ``enable.ssl.certificate.verification=false`` turns verification off entirely.
    A client certificate (mutual TLS) comes from PEM files, in-memory PEMs or PKCS#12.
    ``ssl.providers`` are loaded first, then the engine of ``ssl.engine.location``, whose
    certificate and key (when it supplies them) become the client identity, as librdkafka
    uses them; ``ssl.cipher.suites``, ``ssl.curves.list`` and ``ssl.sigalgs.list`` limit
    what the client offers (see ``openssl``).
    """
    if config["ssl.providers"]:
        openssl.load_providers(config["ssl.providers"])
    engine = openssl.load_engine(config["ssl.engine.location"], config["ssl.engine.id"]) \
        if config["ssl.engine.location"] else None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    limit_algorithms(ctx, config)
    load_trust(ctx, config)
    load_identity(ctx, config)
    if engine is not None:
        openssl.use_engine_client_cert(ctx, engine)
    if not config["enable.ssl.certificate.verification"]:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = config["ssl.endpoint.identification.algorithm"] == "https"
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def limit_algorithms(ctx: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """Apply ``ssl.cipher.suites``, ``ssl.curves.list`` and ``ssl.sigalgs.list`` when set."""
    ciphers = config["ssl.cipher.suites"]
    if ciphers:
        try:
            ctx.set_ciphers(ciphers)
        except ssl.SSLError as exc:
            raise ConfigError(f'"ssl.cipher.suites" {ciphers!r} is refused by OpenSSL: '
                              f"{' '.join(map(str, exc.args))}") from None
    if config["ssl.curves.list"]:
        openssl.set_groups(ctx, config["ssl.curves.list"])
    if config["ssl.sigalgs.list"]:
        openssl.set_sigalgs(ctx, config["ssl.sigalgs.list"])
