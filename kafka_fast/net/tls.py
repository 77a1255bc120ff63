"""TLS client context from the ``ssl.*`` configuration keys."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

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
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    load_trust(ctx, config)
    load_identity(ctx, config)
    if not config["enable.ssl.certificate.verification"]:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = config["ssl.endpoint.identification.algorithm"] == "https"
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
