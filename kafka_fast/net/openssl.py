"""OpenSSL settings Python's ``ssl`` module has no method for, applied through the OpenSSL
library that module is linked with: the TLS groups (``ssl.curves.list``), the signature
algorithms (``ssl.sigalgs.list``), providers (``ssl.providers``) and engines
(``ssl.engine.location``/``ssl.engine.id``).

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
