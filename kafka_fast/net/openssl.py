"""OpenSSL settings Python's ``ssl`` module has no method for, applied through the OpenSSL
library that module is linked with: the TLS groups (``ssl.curves.list``), the signature
algorithms (``ssl.sigalgs.list``), providers (``ssl.providers``) and the client certificate
and key an engine supplies (``ssl.engine.location``/``ssl.engine.id``).

The library is reached with ``ctypes`` only when one of those keys is set. Every step is
checked, and a failed check refuses the value with the reason, never ignores it:

- the ``libssl``/``libcrypto`` found must be the very build ``ssl`` reports
  (``OpenSSL_version`` equals ``ssl.OPENSSL_VERSION``): the one mapped into this process by
  Python's ``_ssl`` module where ``/proc/self/maps`` shows it;
- an ``SSLContext``'s ``SSL_CTX`` is the pointer CPython keeps right after the object header;
  it is used only after ``SSL_CTX_get_options`` and ``SSL_CTX_get_security_level`` read
  through it agree with the context's ``options`` and ``security_level``, and still agree
  after the options are changed and changed back;
- OpenSSL's error queue is read into the error message and then emptied, so that nothing is
  left for the ``ssl`` module to misreport later.

On Python 3.14 and later ``SSLContext.set_groups``/``set_client_sigalgs`` are used instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import ssl
import sys
import threading
from typing import Any

from ..errors import ConfigError

_SET_GROUPS_LIST = 92  # SSL_CTRL_SET_GROUPS_LIST (= SSL_CTRL_SET_CURVES_LIST)
_SET_SIGALGS_LIST = 98  # SSL_CTRL_SET_SIGALGS_LIST
_HEADER = object.__basicsize__  # ob_refcnt + ob_type: the SSL_CTX pointer comes next

_lock = threading.Lock()
_libs: tuple[Any, Any] | None = None
#: Providers loaded so far (name -> OSSL_PROVIDER*): each is loaded once per process.
_providers: dict[str, int] = {}
#: Engines initialised so far ((id, location) -> ENGINE*).
_engines: dict[tuple[str, str], int] = {}


class OpenSSLUnavailable(ConfigError):
    """The OpenSSL library of the ``ssl`` module cannot be reached safely."""


def _mapped_paths() -> list[str]:
    """Paths of libssl/libcrypto mapped into this process (Linux), libssl first."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps
                     if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    found = [p for p in paths if "/libssl." in p or "/libcrypto." in p]
    return sorted(found, key=lambda p: "/libcrypto." in p)


def _load(what: str) -> tuple[Any, Any]:
    """(libssl, libcrypto) of the ``ssl`` module's own build, or OpenSSLUnavailable."""
    global _libs
    with _lock:
        if _libs is not None:
            return _libs
        mapped = _mapped_paths()
        ssl_path = next((p for p in mapped if "/libssl." in p), None) \
            or ctypes.util.find_library("ssl")
        crypto_path = next((p for p in mapped if "/libcrypto." in p), None) \
            or ctypes.util.find_library("crypto")
        if not ssl_path or not crypto_path:
            raise OpenSSLUnavailable(f"{what}: the OpenSSL library of Python's ssl module "
                                     "was not found")
        try:
            libssl, libcrypto = ctypes.CDLL(ssl_path), ctypes.CDLL(crypto_path)
            libcrypto.OpenSSL_version.restype = ctypes.c_char_p
            libcrypto.OpenSSL_version.argtypes = [ctypes.c_int]
            version = libcrypto.OpenSSL_version(0).decode("ascii", "replace")
        except (OSError, AttributeError) as exc:
            raise OpenSSLUnavailable(f"{what}: cannot use {ssl_path}: {exc}") from None
        if version != ssl.OPENSSL_VERSION:
            raise OpenSSLUnavailable(f"{what}: {crypto_path} is {version!r}, not the "
                                     f"{ssl.OPENSSL_VERSION!r} of Python's ssl module")
        _declare(libssl, libcrypto)
        _libs = (libssl, libcrypto)
        return _libs


def _declare(libssl: Any, libcrypto: Any) -> None:
    vp, cp, i, ul = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_ulong
    libssl.SSL_CTX_get_options.restype = ctypes.c_uint64
    libssl.SSL_CTX_get_options.argtypes = [vp]
    libssl.SSL_CTX_get_security_level.restype = i
    libssl.SSL_CTX_get_security_level.argtypes = [vp]
    libssl.SSL_CTX_ctrl.restype = ctypes.c_long
    libssl.SSL_CTX_ctrl.argtypes = [vp, i, ctypes.c_long, vp]
    libcrypto.ERR_get_error.restype = ul
    libcrypto.ERR_get_error.argtypes = []
    libcrypto.ERR_error_string_n.restype = None
    libcrypto.ERR_error_string_n.argtypes = [ul, cp, ctypes.c_size_t]
    libcrypto.ERR_clear_error.restype = None
    libcrypto.ERR_clear_error.argtypes = []


def _errors(libcrypto: Any) -> str:
    """OpenSSL's queued errors as text; the queue is left empty."""
    out: list[str] = []
    for _ in range(16):
        code = libcrypto.ERR_get_error()
        if not code:
            break
        buf = ctypes.create_string_buffer(256)
        libcrypto.ERR_error_string_n(code, buf, len(buf))
        out.append(buf.value.decode("ascii", "replace"))
    libcrypto.ERR_clear_error()
    return "; ".join(out) or "no reason given by OpenSSL"


def _ssl_ctx(ctx: ssl.SSLContext, libssl: Any, what: str) -> int:
    """The ``SSL_CTX*`` ``ctx`` holds, after the checks the module docstring describes."""
    if type(ctx).__basicsize__ < _HEADER + ctypes.sizeof(ctypes.c_void_p):
        raise OpenSSLUnavailable(f"{what}: this Python's SSLContext layout is unknown")
    pointer = ctypes.c_void_p.from_address(id(ctx) + _HEADER).value
    if not pointer:
        raise OpenSSLUnavailable(f"{what}: this Python's SSLContext holds no SSL_CTX")

    def agrees() -> bool:
        return (libssl.SSL_CTX_get_options(pointer) == int(ctx.options)
                and libssl.SSL_CTX_get_security_level(pointer) == ctx.security_level)

    original = ctx.options
    try:
        ok = agrees()
        ctx.options = original ^ ssl.OP_NO_TICKET
        ok = ok and agrees()
    finally:
        ctx.options = original
    if not (ok and agrees()):
        raise OpenSSLUnavailable(f"{what}: this Python's SSLContext layout is unknown")
    return pointer


def _ctrl_list(ctx: ssl.SSLContext, key: str, command: int, value: str) -> None:
    if not value.isascii() or "\0" in value:
        raise ConfigError(f'"{key}" must be ASCII without NUL characters')
    libssl, libcrypto = _load(f'"{key}"')
    pointer = _ssl_ctx(ctx, libssl, f'"{key}"')
    libcrypto.ERR_clear_error()
    arg = ctypes.create_string_buffer(value.encode("ascii"))
    if libssl.SSL_CTX_ctrl(pointer, command, 0, ctypes.cast(arg, ctypes.c_void_p)) != 1:
        raise ConfigError(f'"{key}" {value!r} is refused by OpenSSL '
                          f"({ssl.OPENSSL_VERSION}): {_errors(libcrypto)}")


def set_groups(ctx: ssl.SSLContext, value: str) -> None:
    """Offer only these TLS groups (curves), e.g. ``"P-256:X25519"``."""
    setter = getattr(ctx, "set_groups", None)
    if setter is not None and sys.version_info >= (3, 14):
        try:
            setter(value)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f'"ssl.curves.list" {value!r} is refused by OpenSSL: '
                              f"{exc}") from None
        return
    _ctrl_list(ctx, "ssl.curves.list", _SET_GROUPS_LIST, value)


def set_sigalgs(ctx: ssl.SSLContext, value: str) -> None:
    """Offer only these signature algorithms, e.g. ``"ECDSA+SHA256:RSA-PSS+SHA256"``."""
    _ctrl_list(ctx, "ssl.sigalgs.list", _SET_SIGALGS_LIST, value)


def load_providers(value: str) -> list[str]:
    """Load each OpenSSL 3 provider of the comma-separated list (once per process, as
    librdkafka does with ``OSSL_PROVIDER_load``); the names loaded."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        return []
    key = '"ssl.providers"'
    _, libcrypto = _load(key)
    if not hasattr(libcrypto, "OSSL_PROVIDER_load"):
        raise ConfigError(f"{key}: providers need OpenSSL 3, this is {ssl.OPENSSL_VERSION}")
    libcrypto.OSSL_PROVIDER_load.restype = ctypes.c_void_p
    libcrypto.OSSL_PROVIDER_load.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    with _lock:
        for name in names:
            if name in _providers:
                continue
            if not name.isascii() or "\0" in name:
                raise ConfigError(f"{key}: provider names are ASCII, not {name!r}")
            libcrypto.ERR_clear_error()
            handle = libcrypto.OSSL_PROVIDER_load(None, name.encode("ascii"))
            if not handle:
                raise ConfigError(f"{key}: OpenSSL provider {name!r} cannot be loaded: "
                                  f"{_errors(libcrypto)}")
            _providers[name] = handle
    return names


def provider_available(name: str) -> bool:
    """Whether OpenSSL's default library context has provider ``name`` loaded."""
    _, libcrypto = _load("ssl.providers")
    libcrypto.OSSL_PROVIDER_available.restype = ctypes.c_int
    libcrypto.OSSL_PROVIDER_available.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return bool(libcrypto.OSSL_PROVIDER_available(None, name.encode("ascii")))


def _declare_engine(libssl: Any, libcrypto: Any) -> None:
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, restype, argtypes in (
            ("ENGINE_by_id", vp, [cp]), ("ENGINE_ctrl_cmd_string", i, [vp, cp, cp, i]),
            ("ENGINE_init", i, [vp]), ("ENGINE_free", i, [vp]),
            ("ENGINE_get_id", cp, [vp]),
            ("ENGINE_load_ssl_client_cert", i, [vp, vp, vp, ctypes.POINTER(vp),
                                                ctypes.POINTER(vp), vp, vp, vp]),
            ("X509_free", None, [vp]), ("EVP_PKEY_free", None, [vp]),
            ("X509_get_subject_name", vp, [vp]), ("X509_OBJECT_get0_X509", vp, [vp]),
            ("X509_STORE_get0_objects", vp, [vp]),
            ("OPENSSL_sk_new_null", vp, []), ("OPENSSL_sk_push", i, [vp, vp]),
            ("OPENSSL_sk_num", i, [vp]), ("OPENSSL_sk_value", vp, [vp, i]),
            ("OPENSSL_sk_free", None, [vp])):
        function = getattr(libcrypto, name)
        function.restype, function.argtypes = restype, argtypes
    for name, restype, argtypes in (
            ("SSL_CTX_get_cert_store", vp, [vp]), ("SSL_CTX_use_certificate", i, [vp, vp]),
            ("SSL_CTX_use_PrivateKey", i, [vp, vp]), ("SSL_CTX_check_private_key", i, [vp])):
        function = getattr(libssl, name)
        function.restype, function.argtypes = restype, argtypes


def load_engine(location: str, engine_id: str = "dynamic") -> int:
    """The initialised ``ENGINE*`` of the shared library ``location``, loaded once per
    process as librdkafka loads it: the ``dynamic`` engine given ``SO_PATH``, ``LIST_ADD 1``
    and ``LOAD``, then ``ENGINE_init``. An ``engine_id`` OpenSSL already knows (an engine
    loaded and listed before) is initialised as it is (librdkafka sends it ``SO_PATH``, which
    such an engine refuses, so a second client in the process fails there)."""
    key = '"ssl.engine.location"'
    for name, value in (("ssl.engine.location", location), ("ssl.engine.id", engine_id)):
        if not value.isascii() or "\0" in value:
            raise ConfigError(f'"{name}" must be ASCII without NUL characters')
    libssl, libcrypto = _load(key)
    if not hasattr(libcrypto, "ENGINE_by_id"):
        raise OpenSSLUnavailable(f"{key}: {ssl.OPENSSL_VERSION} has no engine support")
    with _lock:
        cached = _engines.get((engine_id, location))
        if cached:
            return cached
        _declare_engine(libssl, libcrypto)
        libcrypto.ERR_clear_error()
        engine = libcrypto.ENGINE_by_id(engine_id.encode("ascii"))
        libcrypto.ERR_clear_error()  # a failed look-up of engine_id is not an error
        # An engine OpenSSL knows by its own id (loaded before, LIST_ADD) is used as it is.
        commands = ((b"SO_PATH", location.encode("ascii")), (b"LIST_ADD", b"1"),
                    (b"LOAD", None)) if not engine or engine_id == "dynamic" else ()
        if not engine:
            engine = libcrypto.ENGINE_by_id(b"dynamic")
        if not engine:
            raise ConfigError(f"{key}: OpenSSL has no dynamic engine: {_errors(libcrypto)}")
        for command, argument in commands:
            if libcrypto.ENGINE_ctrl_cmd_string(engine, command, argument, 0) != 1:
                reason = _errors(libcrypto)
                libcrypto.ENGINE_free(engine)
                raise ConfigError(f"{key} {location!r}: the OpenSSL engine cannot be loaded "
                                  f"({command.decode()}): {reason}")
        if libcrypto.ENGINE_init(engine) != 1:
            reason = _errors(libcrypto)
            libcrypto.ENGINE_free(engine)
            raise ConfigError(f"{key} {location!r}: the OpenSSL engine does not initialise: "
                              f"{reason}")
        _engines[(engine_id, location)] = engine
        return int(engine)


def _trusted_names(ctx_pointer: int, libssl: Any, libcrypto: Any) -> int:
    """A new ``STACK_OF(X509_NAME)`` of the subjects of the context's trusted certificates
    (the CA names an engine may choose a certificate by, as librdkafka passes them)."""
    names = libcrypto.OPENSSL_sk_new_null()
    if not names:
        raise ConfigError(f'"ssl.engine.location": out of memory: {_errors(libcrypto)}')
    store = libssl.SSL_CTX_get_cert_store(ctx_pointer)
    objects = libcrypto.X509_STORE_get0_objects(store) if store else None
    count = libcrypto.OPENSSL_sk_num(objects) if objects else 0
    for index in range(max(count, 0)):
        cert = libcrypto.X509_OBJECT_get0_X509(libcrypto.OPENSSL_sk_value(objects, index))
        if cert and libcrypto.OPENSSL_sk_push(
                names, libcrypto.X509_get_subject_name(cert)) <= 0:
            libcrypto.OPENSSL_sk_free(names)
            raise ConfigError(f'"ssl.engine.location": out of memory: {_errors(libcrypto)}')
    return int(names)


def use_engine_client_cert(ctx: ssl.SSLContext, engine: int) -> None:
    """Make the certificate and private key the engine supplies
    (``ENGINE_load_ssl_client_cert``) the client identity of ``ctx``, checked to match, as
    librdkafka does; the context's trusted CAs must be loaded first."""
    key = '"ssl.engine.location"'
    libssl, libcrypto = _load(key)
    pointer = _ssl_ctx(ctx, libssl, key)
    libcrypto.ERR_clear_error()
    names = _trusted_names(pointer, libssl, libcrypto)
    cert, pkey = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        result = libcrypto.ENGINE_load_ssl_client_cert(
            engine, None, names, ctypes.byref(cert), ctypes.byref(pkey), None, None, None)
    finally:
        libcrypto.OPENSSL_sk_free(names)
    engine_name = (libcrypto.ENGINE_get_id(engine) or b"?").decode("ascii", "replace")
    try:
        if result != 1 or not cert.value or not pkey.value:
            what = ("certificate" if not cert.value else "private key") if result == 1 \
                else "client certificate"
            raise ConfigError(f"{key}: OpenSSL engine {engine_name!r} supplied no {what} "
                              f"(ENGINE_load_ssl_client_cert returned {result}): "
                              f"{_errors(libcrypto)}")
        for step, call in (("SSL_CTX_use_certificate",
                            lambda: libssl.SSL_CTX_use_certificate(pointer, cert)),
                           ("SSL_CTX_use_PrivateKey",
                            lambda: libssl.SSL_CTX_use_PrivateKey(pointer, pkey)),
                           ("SSL_CTX_check_private_key",
                            lambda: libssl.SSL_CTX_check_private_key(pointer))):
            if call() != 1:
                raise ConfigError(f"{key}: the certificate and key of OpenSSL engine "
                                  f"{engine_name!r} are refused ({step}): "
                                  f"{_errors(libcrypto)}")
    finally:
        if cert.value:
            libcrypto.X509_free(cert)
        if pkey.value:
            libcrypto.EVP_PKEY_free(pkey)
        libcrypto.ERR_clear_error()
