#!/usr/bin/env bash
# Install the system tools the integration tests drive as independent peers:
#   kcat  - a second Kafka client (librdkafka based) for interop tests
#   socat - TLS terminator put in front of Tansu for the TLS tests
#   aarch64 cross compiler + qemu-user - run the ARMv8 CRC32C kernel under emulation
# Idempotent: installs only what is missing, runs `apt-get update` at most once.
# Exits non-zero with a clear message when something cannot be installed.
set -euo pipefail

# command name -> Debian package
declare -A PACKAGES=([kcat]=kcat [socat]=socat 
    [aarch64-linux-gnu-gcc]="gcc-aarch64-linux-gnu libc6-dev-arm64-cross" [qemu-aarch64]=qemu-user)

missing=()
for cmd in "${!PACKAGES[@]}"; do
    if command -v "$cmd" >/dev/null 2>&1; then
        echo "install_system_deps: $cmd already present at $(command -v "$cmd")"
    else
        # shellcheck disable=SC2206  # a value may name several packages
        missing+=(${PACKAGES[$cmd]})
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install_system_deps: nothing to install"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install_system_deps: ERROR: need root (or sudo) to install: ${missing[*]}" >&2
        exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_system_deps: ERROR: apt-get not found; install by hand: ${missing[*]}" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install_system_deps: installing ${missing[*]}"
if ! $SUDO apt-get update -qq; then
    echo "install_system_deps: ERROR: apt-get update failed" >&2
    exit 1
fi
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "install_system_deps: ERROR: apt-get install ${missing[*]} failed" >&2
    exit 1
fi
for cmd in "${!PACKAGES[@]}"; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        echo "install_system_deps: ERROR: $cmd still missing after install" >&2
        exit 1
    fi
done
echo "install_system_deps: installed ${missing[*]}"
