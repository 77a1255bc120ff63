#!/usr/bin/env bash
# Fetch the Apache Kafka broker jars the real-broker tests start (tests/harness/apache_kafka.py).
# Resolves tests/harness/kafka/pom.xml with Maven into a cache outside the repository:
#   ${XDG_CACHE_HOME:-~/.cache}/kafka_fast/kafka-<version>/libs
# Idempotent: prints one line and does nothing when the jars are cached. When java or mvn
# is missing it prints what to install and exits 0 (the tests then skip, or fail under CI=true);
# when Maven cannot resolve the jars it prints why and exits 1 under CI=true, else 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/tests/harness/kafka/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")"
CACHE="${KAFKA_FAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka_fast}"
DEST="$CACHE/kafka-$VERSION"

if [ -f "$DEST/libs/.complete" ]; then
    echo "fetch_kafka: Apache Kafka $VERSION cached in $DEST/libs"
    exit 0
fi
for cmd in java mvn; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        echo "fetch_kafka: $cmd not found, real-broker tests will skip (install a JDK 17+ and Maven, e.g. apt-get install openjdk-17-jre-headless maven)"
        exit 0
    fi
done

mkdir -p "$DEST"
TMP="$(mktemp -d "$DEST/libs.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$TMP" >"$TMP.log" 2>&1; then
    echo "fetch_kafka: ERROR: mvn could not resolve Apache Kafka $VERSION (log: $TMP.log)" >&2
    tail -20 "$TMP.log" >&2
    # Outside CI the real-broker tests then skip, saying to run this script again.
    case "${CI:-}" in 1|true|TRUE|True|yes) exit 1 ;; *) exit 0 ;; esac
fi
rm -f "$TMP.log"
touch "$TMP/.complete"
rm -rf "$DEST/libs"
mv "$TMP" "$DEST/libs"
echo "fetch_kafka: Apache Kafka $VERSION fetched into $DEST/libs ($(ls "$DEST/libs" | wc -l) jars)"
