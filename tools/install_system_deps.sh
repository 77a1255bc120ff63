#!/usr/bin/env bash
# Install the system peers some tests drive, best effort:
#   kcat   - a second Kafka client (librdkafka based) for interop tests
#   socat  - TLS terminator put in front of Tansu for the TLS tests
#   krb5kdc, kadmin.local, kinit - an MIT KDC for the GSSAPI (Kerberos) tests; krb5-config
#            (libkrb5-dev) to build the gssapi package; Cyrus SASL's GSSAPI module for kcat
#   openssl-dev - OpenSSL's headers (libssl-dev) and gcc, to build the test OpenSSL engine
#   with --with-cross (or under CI=true): aarch64 cross compiler + qemu-user, ~210 MB, for the
#            one test that runs the ARMv8 CRC32C kernel under emulation
# Java 17 (Spark tests) and Maven are never installed here, only reported when missing.
#
# Installs only what is missing, with apt-get as root (or through passwordless sudo). Without
# them it prints one line per missing peer and exits 0: the tests that need a missing peer
# skip with a line naming it. Under CI=true anything left missing makes it exit 1, since the
# tests needing it fail there.
set -uo pipefail

WITH_CROSS=0
for arg in "$@"; do
    case "$arg" in
        --with-cross) WITH_CROSS=1 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install_system_deps: unknown argument $arg (known: --with-cross)" >&2; exit 2 ;;
    esac
done
case "${CI:-}" in ""|0|false|FALSE|False) ON_CI=0; OUTCOME=skip ;; *) ON_CI=1; WITH_CROSS=1; OUTCOME=fail ;; esac

# command -> Debian packages, and what a missing one costs
declare -A PACKAGES=([kcat]=kcat [socat]=socat
    [krb5kdc]="krb5-kdc krb5-admin-server krb5-user" [krb5-config]=libkrb5-dev
    [sasl2-gssapi]=libsasl2-modules-gssapi-mit [openssl-dev]="libssl-dev gcc" [perf]=linux-perf)
declare -A NEEDED_BY=([kcat]="kcat interop tests" [socat]="TLS tests (tansu_tls)"
    [krb5kdc]="GSSAPI tests" [krb5-config]="building the gssapi package (GSSAPI tests)"
    [sasl2-gssapi]="the GSSAPI test side by side with kcat"
    [openssl-dev]="the ssl.engine.location tests (a test engine is compiled)"
    [perf]="the profiles' counting test (benchmarks/profile_paths.py)")
ORDER=(kcat socat krb5kdc krb5-config sasl2-gssapi openssl-dev perf)
if [ "$WITH_CROSS" -eq 1 ]; then
    PACKAGES[aarch64-linux-gnu-gcc]="gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
    PACKAGES[qemu-aarch64]=qemu-user
    NEEDED_BY[aarch64-linux-gnu-gcc]="the ARMv8 CRC32C test"
    NEEDED_BY[qemu-aarch64]="the ARMv8 CRC32C test"
    ORDER+=(aarch64-linux-gnu-gcc qemu-aarch64)
fi

say() { echo "install_system_deps: $*"; }

present() {  # a command on PATH (or in /usr/sbin), Cyrus SASL's GSSAPI module, OpenSSL's headers
    case "$1" in
        sasl2-gssapi) compgen -G "/usr/lib/*/sasl2/libgssapiv2.so*" >/dev/null ;;
        openssl-dev) [ -f /usr/include/openssl/engine.h ] && command -v gcc >/dev/null 2>&1 ;;
        *) command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ;;
    esac
}

missing_cmds() {
    local cmd
    for cmd in "${ORDER[@]}"; do
        present "$cmd" || echo "$cmd"
    done
}

report_missing() {  # one line per missing peer; $1 says why nothing was installed
    local cmd
    for cmd in $(missing_cmds); do
        say "missing $cmd (Debian: ${PACKAGES[$cmd]}; $1): ${NEEDED_BY[$cmd]} will $OUTCOME"
    done
}

report_unmanaged() {  # peers this script never installs
    command -v java >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] ||
        say "missing java (Java 17, e.g. Debian openjdk-17-jre-headless; not installed here): Spark tests will $OUTCOME"
    command -v mvn >/dev/null 2>&1 ||
        say "missing mvn (Maven, e.g. Debian maven; not installed here): needed to fetch Apache Kafka for the real-broker tests"
    if [ "$WITH_CROSS" -eq 0 ]; then
        for cmd in aarch64-linux-gnu-gcc qemu-aarch64; do
            command -v "$cmd" >/dev/null 2>&1 ||
                say "optional $cmd not installed (--with-cross installs it): the ARMv8 CRC32C test will skip"
        done
    fi
}

finish() {
    report_unmanaged
    local left
    left=$(missing_cmds)
    if [ -z "$left" ]; then
        say "system peers present: ${ORDER[*]}"
        exit 0
    fi
    if [ "$ON_CI" -eq 1 ]; then
        say "ERROR: CI=true and still missing: $(echo "$left" | tr '\n' ' ')" >&2
        exit 1
    fi
    exit 0
}

todo=()
for cmd in $(missing_cmds); do
    # shellcheck disable=SC2206  # a value may name several packages
    todo+=(${PACKAGES[$cmd]})
done
if [ "${#todo[@]}" -eq 0 ]; then
    finish
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        report_missing "needs root or passwordless sudo to install"
        finish
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    report_missing "no apt-get here: install by hand"
    finish
fi

export DEBIAN_FRONTEND=noninteractive
say "installing ${todo[*]}"
if ! $SUDO apt-get update -qq; then
    report_missing "apt-get update failed"
    finish
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends "${todo[@]}" >/dev/null; then
    report_missing "apt-get install failed"
    finish
fi
report_missing "still missing after apt-get install"
finish
