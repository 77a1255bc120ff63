"""Keys shared by every client: bootstrap, connections, security, metadata."""

from __future__ import annotations

from .._version import __version__
from .table import Key

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
#: What the broker accepts in ApiVersions v3+ ClientSoftwareName/Version (its own check:
#: anything else is answered with INVALID_REQUEST).
SOFTWARE_PATTERN = r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?"

KEYS = [
    Key("bootstrap.servers", "list", [],
        "Initial host:port list used to discover the cluster. Without it (or None) the client "
        "is built, as librdkafka's is, logs that it cannot connect and reaches no broker: "
        "records queue until message.timeout.ms, requests time out.",
        aliases=("metadata.broker.list",)),
    Key("client.id", "str", "kafka_fast", "Client identifier sent in every request header."),
    Key("client.software.name", "str", "kafka-fast",
        "Client software name sent to brokers in ApiVersions v3+; "
        "letters, digits, '.' and '-', beginning and ending with a letter or "
        "digit, as the broker requires (anything else is refused here).",
        pattern=SOFTWARE_PATTERN, java=False),
    Key("client.software.version", "str", __version__,
        "Client software version sent with client.software.name; the same characters.",
        pattern=SOFTWARE_PATTERN, java=False),
    Key("client.rack", "str", "",
        "Rack of this client, sent in Fetch: a leader with a rack-aware replica.selector.class "
        "may name a replica to read from, which the consumer then fetches from until "
        "metadata.max.age.ms passes or the replica fails (KIP-392 follower fetching).",
        roles=("consumer", "share")),
    Key("request.timeout.ms", "int", 30000, "Time to wait for a response to one request.",
        minimum=1, maximum=900000, aliases=("socket.timeout.ms",)),
    Key("socket.connection.setup.timeout.ms", "int", 30000,
        "Time allowed to connect, handshake TLS, negotiate versions and authenticate.", minimum=1,
        maximum=2147483647),
    Key("connections.max.idle.ms", "int", 540000,
        "Close connections idle this long (0 disables).", minimum=0, maximum=2147483647),
    Key("reconnect.backoff.ms", "int", 100, "Initial backoff before reconnecting to a broker.",
        minimum=0, maximum=3600000),
    Key("reconnect.backoff.max.ms", "int", 10000, "Maximum reconnect backoff.", minimum=0,
        maximum=3600000),
    Key("max.in.flight.requests.per.connection", "int", 5,
        "Requests outstanding per broker connection.", minimum=1, maximum=1000000,
        aliases=("max.in.flight",)),
    Key("send.buffer.bytes", "int", 0, "SO_SNDBUF (0 = system default).", minimum=0,
        maximum=100000000, aliases=("socket.send.buffer.bytes",)),
    Key("receive.buffer.bytes", "int", 0, "SO_RCVBUF (0 = system default).", minimum=0,
        maximum=100000000, aliases=("socket.receive.buffer.bytes",)),
    Key("receive.message.max.bytes", "int", 100000000,
        "Largest response frame accepted from a broker; a larger one fails the connection "
        "(a consumer raises it to fetch.max.bytes + 512 when that is larger).",
        minimum=1000, maximum=2147483647, java=False),
    Key("socket.nagle.disable", "bool", True, "Set TCP_NODELAY on broker sockets.", java=False),
    Key("socket.keepalive.enable", "bool", False, "Set SO_KEEPALIVE on broker sockets.",
        java=False),
    Key("client.dns.lookup", "enum", "use_all_dns_ips",
        "Every address a broker name resolves to is tried, one per connection attempt "
        "(use_all_dns_ips); resolve_canonical_bootstrap_servers_only also replaces each "
        "bootstrap host, when the client is built, by the canonical names of its addresses "
        "(reverse DNS look-up), as the Java client does.",
        choices=("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    Key("metadata.max.age.ms", "int", 300000,
        "Refresh the metadata of the topics in use (and the broker list) at least this often "
        "(the Java client's meaning; with topic.metadata.refresh.interval.ms also given, the "
        "shorter of the two).", minimum=1, maximum=86400000),
    Key("topic.metadata.refresh.interval.ms", "int", 300000,
        "Period of the metadata refresh of the topics in use and the broker list, as in "
        "librdkafka: new partitions and leader changes are noticed within it; with no topic in "
        "use only the broker list is refreshed, at most every 10 s. -1 switches the periodic "
        "refresh off (unless metadata.max.age.ms is given too). Default: metadata.max.age.ms.",
        minimum=-1, maximum=3600000, java=False),
    Key("metadata.recovery.strategy", "enum", "rebootstrap",
        "What the client does when the brokers it learned from metadata cannot give it "
        "metadata: rebootstrap forgets them and starts again from bootstrap.servers (when "
        "every known broker is unreachable, after metadata.recovery.rebootstrap.trigger.ms "
        "without metadata, or when a Metadata answer says REBOOTSTRAP_REQUIRED; KIP-899, "
        "KIP-1102); none keeps dialling the learned brokers and never goes back to the "
        "bootstrap list.", choices=("rebootstrap", "none")),
    Key("metadata.recovery.rebootstrap.trigger.ms", "int", 300000,
        "With metadata.recovery.strategy=rebootstrap: how long metadata may stay "
        "unobtainable from the learned brokers before the client rebootstraps.",
        minimum=0, maximum=2147483647),
    Key("retry.backoff.ms", "int", 100, "Initial backoff before retrying a failed request.",
        minimum=1, maximum=300000),
    Key("retry.backoff.max.ms", "int", 1000, "Maximum retry backoff.", minimum=1,
        maximum=300000),
    Key("api.version.request", "bool", True, "Ask brokers for their supported versions.",
        java=False),
    Key("security.protocol", "enum", "PLAINTEXT", "Transport and authentication.",
        choices=SECURITY_PROTOCOLS),
    Key("sasl.mechanism", "enum", "PLAIN",
        "SASL mechanism. Sessions the broker limits (connections.max.reauth.ms) are "
        "re-authenticated on the same connection before they end (KIP-368).",
        choices=SASL_MECHANISMS,
        aliases=("sasl.mechanisms",), exact_case=True),
    Key("sasl.username", "str", "", "SASL user name."),
    Key("sasl.kerberos.service.name", "str", "kafka",
        "GSSAPI: the brokers' Kerberos service name (their principal is NAME/broker-host)."),
    Key("sasl.kerberos.principal", "str", "kafkaclient",
        "GSSAPI: the client's principal, whose credentials come from sasl.kerberos.keytab.",
        java=False),
    Key("sasl.kerberos.keytab", "str", "",
        "GSSAPI: keytab of sasl.kerberos.principal; credentials are acquired from it at each "
        "login into a memory credential cache (needs the gssapi package). Empty: the "
        "default credential cache (KRB5CCNAME, filled by kinit).", java=False),
    Key("sasl.kerberos.kinit.cmd", "str",
        'kinit -R -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal} || '
        'kinit -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}',
        "Accepted and not run: credentials come from the keytab directly.", java=False,
        ignored=True),
    Key("sasl.kerberos.min.time.before.relogin", "int", 60000,
        "Accepted; every login acquires fresh credentials from the keytab, so no periodic "
        "relogin is needed.", minimum=0, maximum=86400000, ignored=True),
    Key("sasl.password", "password", "", "SASL password."),
    Key("oauth_cb", "callable", None,
        "OAUTHBEARER token source: called with sasl.oauthbearer.config, returns (token, "
        "expiry seconds since the epoch) or (token, expiry, principal, extensions). Called "
        "once while the client is built, on the caller's thread (an exception or an unusable "
        "expiry - NaN, infinite, past, not a number - fails the constructor with "
        "KafkaException SASL_AUTHENTICATION_FAILED), then on a worker thread once 80% of the "
        "token's lifetime has passed (a failure reaches error_cb as _AUTHENTICATION and the "
        "call is retried after 10 s).",
        java=False),
    Key("sasl.oauthbearer.config", "str", "",
        "Passed to oauth_cb; for the unsecured JWT: principal=NAME [lifeSeconds=N] "
        "[scope=A,B] [extension_NAME=VALUE].", java=False),
    Key("enable.sasl.oauthbearer.unsecure.jwt", "bool", False,
        "Without oauth_cb, log in with an unsigned JWT built from sasl.oauthbearer.config "
        "(for development brokers only).", java=False),
    Key("sasl.oauthbearer.method", "enum", "default",
        "Where OAUTHBEARER tokens come from: default (oauth_cb or the unsecured JWT) or oidc "
        "(an OAuth 2.0 token endpoint, sasl.oauthbearer.grant.type, fetched on a worker "
        "thread and renewed after 80% of its lifetime; an oauth_cb takes precedence).",
        choices=("default", "oidc"), java=False),
    Key("sasl.oauthbearer.token.endpoint.url", "str", "",
        "method=oidc: the token endpoint (http or https) POSTed "
        "grant_type=client_credentials (and scope) with the client id and secret as HTTP "
        "Basic credentials; the answer's access_token (a JWT) is the token, expires_in or "
        "the JWT's exp its lifetime, its sub claim the principal; HTTPS is verified with "
        "https.ca.location or https.ca.pem when set."),
    Key("sasl.oauthbearer.client.id", "str", "",
        "method=oidc: the client id (HTTP Basic user name).", java=False,
        aliases=("sasl.oauthbearer.client.credentials.client.id",)),
    Key("sasl.oauthbearer.client.secret", "password", "",
        "method=oidc: the client secret (HTTP Basic password).", java=False,
        aliases=("sasl.oauthbearer.client.credentials.client.secret",)),
    Key("sasl.oauthbearer.scope", "str", "",
        "method=oidc: the scope requested (omitted when empty)."),
    Key("sasl.oauthbearer.extensions", "str", "",
        "method=oidc: SASL extensions sent with the token, key=value,key2=value2.",
        java=False),
    Key("sasl.oauthbearer.sub.claim.name", "str", "sub",
        "method=oidc: the JWT claim of the token that names the principal.", java=False),
    Key("sasl.oauthbearer.grant.type", "enum", "client_credentials",
        "method=oidc: client_credentials (client id and secret) or "
        "urn:ietf:params:oauth:grant-type:jwt-bearer (a signed JWT assertion, RFC 7523, "
        "built from sasl.oauthbearer.assertion.*; the answer's access_token, else id_token).",
        choices=("client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        java=False),
    Key("sasl.oauthbearer.metadata.authentication.type", "enum", "none",
        "method=oidc: azure_imds fetches tokens from Azure's Instance Metadata Service as "
        "librdkafka does (a GET of sasl.oauthbearer.token.endpoint.url, default "
        "http://169.254.169.254/metadata/identity/oauth2/token, with the query=... of "
        "sasl.oauthbearer.config appended and the header Metadata: true; no client "
        "credentials); none uses sasl.oauthbearer.grant.type. aws_iam is refused: librdkafka "
        "has no built-in flow for it either (pass an oauth_cb).",
        choices=("none", "azure_imds"), java=False),
    Key("sasl.oauthbearer.assertion.algorithm", "enum", "RS256",
        "jwt-bearer: how the assertion is signed (RS256 with an RSA key, ES256 with a P-256 "
        "key; needs the cryptography package).", choices=("RS256", "ES256"), java=False),
    Key("sasl.oauthbearer.assertion.private.key.file", "str", "",
        "jwt-bearer: PEM private key file signing the assertion.", java=False),
    Key("sasl.oauthbearer.assertion.private.key.pem", "password", "",
        "jwt-bearer: PEM private key (text) signing the assertion.", java=False),
    Key("sasl.oauthbearer.assertion.private.key.passphrase", "password", "",
        "jwt-bearer: passphrase of the encrypted private key.", java=False),
    Key("sasl.oauthbearer.assertion.file", "str", "",
        "jwt-bearer: a file holding a ready assertion, read again for every token (instead "
        "of signing one).", java=False),
    Key("sasl.oauthbearer.assertion.jwt.template.file", "str", "",
        "jwt-bearer: JSON with header and payload objects the assertion starts from.",
        java=False),
    Key("sasl.oauthbearer.assertion.claim.sub", "str", "",
        "jwt-bearer: the assertion's sub claim.", java=False),
    Key("sasl.oauthbearer.assertion.claim.iss", "str", "",
        "jwt-bearer: the assertion's iss claim.", java=False),
    Key("sasl.oauthbearer.assertion.claim.aud", "str", "",
        "jwt-bearer: the assertion's aud claim.", java=False),
    Key("sasl.oauthbearer.assertion.claim.exp.seconds", "int", 300,
        "jwt-bearer: the assertion expires this many seconds after it is made.", minimum=1,
        maximum=2147483647, java=False),
    Key("sasl.oauthbearer.assertion.claim.nbf.seconds", "int", 60,
        "jwt-bearer: the assertion is valid from this many seconds before it is made.",
        minimum=0, maximum=2147483647, java=False),
    Key("sasl.oauthbearer.assertion.claim.jti.include", "bool", False,
        "jwt-bearer: give the assertion a random jti (UUID).", java=False),
    Key("ssl.ca.location", "str", "", "CA certificate file (PEM) used to verify brokers."),
    Key("ssl.ca.pem", "str", "",
        "CA certificates (PEM text) used to verify brokers, instead of ssl.ca.location.",
        java=False),
    Key("ssl.crl.location", "str", "",
        "Certificate revocation lists (PEM file): a broker certificate they revoke is "
        "refused (the leaf is checked, as librdkafka does).", java=False),
    Key("ssl.certificate.location", "str", "", "Client certificate file (PEM)."),
    Key("ssl.key.location", "str", "", "Client private key file (PEM)."),
    Key("ssl.certificate.pem", "str", "",
        "Client certificate (PEM text, chain after it), with ssl.key.pem.", java=False),
    Key("ssl.key.pem", "password", "",
        "Client private key (PEM text, encrypted with ssl.key.password or not).", java=False),
    Key("ssl.key.password", "password", "", "Password of the client private key."),
    Key("ssl.keystore.location", "str", "",
        "Client certificate and key in a PKCS#12 file (needs the cryptography package)."),
    Key("ssl.keystore.password", "password", "", "Password of the PKCS#12 keystore."),
    Key("ssl.endpoint.identification.algorithm", "enum", "https",
        "Verify the broker host name against its certificate (https) or not (none).",
        choices=("https", "none", "")),
    Key("enable.ssl.certificate.verification", "bool", True,
        "Verify the broker certificate chain.", java=False),
    Key("ssl.cipher.suites", "str", "",
        "OpenSSL cipher list (ciphers(1) syntax, e.g. ECDHE-ECDSA-AES256-GCM-SHA384) offered "
        "for TLS 1.2 (SSLContext.set_ciphers); a list OpenSSL cannot use is refused.",
        java=False),
    Key("ssl.curves.list", "str", "",
        "TLS groups (curves) offered, colon-separated (e.g. P-256:X25519), set with OpenSSL's "
        "SSL_CTX_set1_groups_list; a list OpenSSL refuses is refused here.", java=False),
    Key("ssl.sigalgs.list", "str", "",
        "Signature algorithms offered, colon-separated (e.g. ECDSA+SHA256:RSA-PSS+SHA256), set "
        "with OpenSSL's SSL_CTX_set1_sigalgs_list; a list OpenSSL refuses is refused here.",
        java=False),
    Key("ssl.providers", "str", "",
        "OpenSSL 3 providers to load (comma-separated, e.g. default,legacy), once per "
        "process, as librdkafka does; a provider that cannot be loaded is refused.",
        java=False),
    Key("ssl.engine.location", "str", "",
        "OpenSSL engine (shared library) that supplies the client certificate and private "
        "key, loaded once per process as librdkafka loads it (the dynamic engine, SO_PATH, "
        "LIST_ADD, LOAD, ENGINE_init; then ENGINE_load_ssl_client_cert). Engines are "
        "deprecated since OpenSSL 3.", java=False),
    Key("ssl.engine.id", "str", "dynamic",
        "OpenSSL engine id tried before the dynamic engine loads ssl.engine.location.",
        java=False),
    Key("https.ca.location", "str", "",
        "CA certificates (PEM file or directory) verifying the OIDC token endpoint's HTTPS, "
        "instead of the system's.", java=False),
    Key("https.ca.pem", "str", "",
        "CA certificates (PEM text) verifying the OIDC token endpoint's HTTPS, instead of "
        "https.ca.location.", java=False),
    Key("error_cb", "callable", None, "Called with a KafkaError for client-level errors.",
        java=False),
    Key("throttle_cb", "callable", None, "Called when a broker throttles this client.",
        java=False),
    Key("stats_cb", "callable", None,
        "Called with the statistics JSON string (librdkafka's layout, see docs/statistics.md) "
        "every statistics.interval.ms, from poll()/consume()/flush().", java=False),
    Key("statistics.interval.ms", "int", 0,
        "How often statistics go to stats_cb (0: never).", java=False, minimum=0,
        maximum=86400000),
    Key("logger", "any", None, "A logging.Logger for client logs.", java=False),
    Key("log_level", "int", 6, "Accepted for compatibility (use the logger's level).",
        minimum=0, maximum=7, java=False, ignored=True),
    Key("debug", "str", "", "Accepted for compatibility (use the logger's level).",
        java=False, ignored=True),
    Key("broker.address.family", "enum", "any", "IP family to resolve broker names to.",
        choices=("any", "v4", "v6"), java=False),
]
