"""TLS client context from the ``ssl.*`` configuration keys."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError


def uses_tls(config: Mapping[str, Any]) -> bool:
    return config["security.protocol"] in ("SSL", "SASL_SSL")


def uses_sasl(config: Mapping[str, Any]) -> bool:
    return config["security.protocol"] in ("SASL_PLAINTEXT", "SASL_SSL")


def make_ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """An ``SSLContext`` verifying brokers against ``ssl.ca.location`` (or the system CAs).

    Host names are checked when ``ssl.endpoint.identification.algorithm`` is ``https``;
    ``enable.ssl.certificate.verification=false`` turns verification off entirely.
    A client certificate is loaded from ``ssl.certificate.location``/``ssl.key.location``.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ca = config["ssl.ca.location"]
    try:
        if ca:
            ctx.load_verify_locations(cafile=ca)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        cert = config["ssl.certificate.location"]
        key = config["ssl.key.location"]
        if cert:
            ctx.load_cert_chain(cert, key or None, config["ssl.key.password"] or None)
        elif key:
            raise ConfigError('"ssl.key.location" needs "ssl.certificate.location"')
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load TLS certificates or keys: {exc}") from None
    if not config["enable.ssl.certificate.verification"]:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        ctx.check_hostname = config["ssl.endpoint.identification.algorithm"] == "https"
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
