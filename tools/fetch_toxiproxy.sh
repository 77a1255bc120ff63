#!/usr/bin/env bash
# Build Toxiproxy's server (Shopify's fault-injecting TCP proxy, started by
# tests/harness/toxiproxy.py) from its Go module into a cache outside the repository, next to
# the Kafka jars: ${KAFKA_FAST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kafka_fast}/toxiproxy-<version>/bin/server
# Idempotent: does nothing when the binary is cached. When Go is missing it prints what to
# install and exits 0 (the tests then skip, or fail under CI=true); when the build fails it
# prints why and exits 1 under CI=true, else 0.
set -euo pipefail

VERSION=2.5.0
CACHE="${KAFKA_FAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka_fast}"
DEST="$CACHE/toxiproxy-$VERSION"

if [ -x "$DEST/bin/server" ]; then
    echo "fetch_toxiproxy: toxiproxy $VERSION cached in $DEST/bin"
    exit 0
fi
GO="$(command -v go || true)"
if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then
    GO=/usr/local/go/bin/go
fi
if [ -z "$GO" ]; then
    echo "fetch_toxiproxy: go not found, the Toxiproxy tests will skip (install Go 1.19+, e.g. apt-get install golang-go)"
    exit 0
fi
mkdir -p "$DEST"
tmp="$(mktemp -d "$DEST/bin.tmp.XXXXXX")"
if ! GOBIN="$tmp" "$GO" install "github.com/Shopify/toxiproxy/v2/cmd/server@v$VERSION" >"$tmp.log" 2>&1; then
    echo "fetch_toxiproxy: ERROR: go install of toxiproxy $VERSION failed (log: $tmp.log)" >&2
    tail -20 "$tmp.log" >&2
    rm -rf "$tmp"
    case "${CI:-}" in 1|true|TRUE|True|yes) exit 1 ;; *) exit 0 ;; esac
fi
rm -f "$tmp.log"
rm -rf "$DEST/bin"
mv "$tmp" "$DEST/bin"
echo "fetch_toxiproxy: toxiproxy $VERSION built into $DEST/bin"
