#!/usr/bin/env bash
# Fetch the Java programs the real-broker tests start, with Maven, into a cache outside the
# repository (${KAFKA_FAST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kafka_fast}):
#   kafka-<version>/libs               Apache Kafka (tests/harness/kafka/pom.xml,
#                                      started by tests/harness/apache_kafka.py), at the
#                                      pom's kafka.version and each
#                                      of kafka.matrix.versions (the broker-version matrix)
#                                      and kafka.tools.v4.version (the Java perf tools'
#                                      client for brokers advertising ApiVersions v4)
#   mock-oauth2-server-<version>/libs  NAV's mock OAuth2/OIDC server (tests/harness/oauth2/pom.xml,
#                                      started by tests/harness/oauth2.py)
# Idempotent: prints one line per program and does nothing when its jars are cached. When java
# or mvn is missing it prints what to install and exits 0 (the tests then skip, or fail under
# CI=true); when Maven cannot resolve the jars it prints why and exits 1 under CI=true, else 0.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${KAFKA_FAST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka_fast}"

# fetch LABEL POM DEST [MVN_ARGS...]: resolve POM's runtime dependencies into DEST/libs.
fetch() {
    local label="$1" pom="$2" dest="$3" tmp
    shift 3
    if [ -f "$dest/libs/.complete" ]; then
        echo "fetch_kafka: $label cached in $dest/libs"
        return 0
    fi
    for cmd in java mvn; do
        if ! command -v "$cmd" >/dev/null 2>&1; then
            echo "fetch_kafka: $cmd not found, real-broker tests will skip (install a JDK 17+ and Maven, e.g. apt-get install openjdk-17-jre-headless maven)"
            exit 0
        fi
    done
    mkdir -p "$dest"
    tmp="$(mktemp -d "$dest/libs.tmp.XXXXXX")"
    if ! mvn -q -B -f "$pom" "$@" dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
        echo "fetch_kafka: ERROR: mvn could not resolve $label (log: $tmp.log)" >&2
        tail -20 "$tmp.log" >&2
        rm -rf "$tmp"
        # Outside CI the tests needing it then skip, saying to run this script again.
        case "${CI:-}" in 1|true|TRUE|True|yes) exit 1 ;; *) return 0 ;; esac
    fi
    rm -f "$tmp.log"
    touch "$tmp/.complete"
    rm -rf "$dest/libs"
    mv "$tmp" "$dest/libs"
    echo "fetch_kafka: $label fetched into $dest/libs ($(ls "$dest/libs" | wc -l) jars)"
}

KAFKA_POM="$ROOT/tests/harness/kafka/pom.xml"
KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM")"
fetch "Apache Kafka $KAFKA_VERSION" "$KAFKA_POM" "$CACHE/kafka-$KAFKA_VERSION"
# The broker-version matrix (tests/compat): the same pom at each listed version not
# fetched above.
MATRIX_VERSIONS="$(sed -n 's:.*<kafka.matrix.versions>\(.*\)</kafka.matrix.versions>.*:\1:p' "$KAFKA_POM")"
for version in ${MATRIX_VERSIONS//,/ }; do
    if [ "$version" = "$KAFKA_VERSION" ]; then
        continue
    fi
    fetch "Apache Kafka $version (version matrix)" "$KAFKA_POM" "$CACHE/kafka-$version" \
        "-Dkafka.version=$version"
done
# The Java perf tools against a broker that advertises ApiVersions up to v4 (Tansu).
TOOLS_VERSION="$(sed -n 's:.*<kafka.tools.v4.version>\(.*\)</kafka.tools.v4.version>.*:\1:p' "$KAFKA_POM")"
case ",$MATRIX_VERSIONS,$KAFKA_VERSION," in
    *",$TOOLS_VERSION,"*) ;;
    *) fetch "Apache Kafka $TOOLS_VERSION (Java tools for ApiVersions v4 brokers)" "$KAFKA_POM" \
           "$CACHE/kafka-$TOOLS_VERSION" "-Dkafka.version=$TOOLS_VERSION" ;;
esac

OAUTH_POM="$ROOT/tests/harness/oauth2/pom.xml"
OAUTH_VERSION="$(sed -n 's:.*<mock.oauth2.version>\(.*\)</mock.oauth2.version>.*:\1:p' "$OAUTH_POM")"
fetch "mock-oauth2-server $OAUTH_VERSION" "$OAUTH_POM" "$CACHE/mock-oauth2-server-$OAUTH_VERSION"
