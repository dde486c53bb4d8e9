#!/usr/bin/env bash
# The Java client's benchmark, side by side in one run (bench/README.md):
# the typed call against the same Lettuce connection's raw command, and
# the servlet filter's requests per second with and without the limiter.
# Needs the reactor installed into tmp/m2 (the Java tier's build) and the
# module (target/release, or RL_MODULE).
#   bench/clients/java/run.sh [redis-server]
set -euo pipefail
cd "$(dirname "$0")/../../.."
server=${1:-redis-server}
module=${RL_MODULE:-$PWD/target/release/libredis_ratelimit.so}
repo=$PWD/tmp/m2
mvn -q -B -o -Dmaven.repo.local="$repo" -f bench/clients/java/pom.xml compile \
    dependency:build-classpath -Dmdep.outputFile="$PWD/tmp/java/bench.classpath"
cp="$PWD/bench/clients/java/target/classes:$(cat tmp/java/bench.classpath)"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --loadmodule "$module" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
echo "== $("$server" --version | head -c 60), load average $(cut -d' ' -f1-3 /proc/loadavg)"
java -cp "$cp" bench.ClientBench "$port" "${ROUNDS:-20}" "${CALLS:-10000}" 2>&1 | grep -v '^SLF4J'
java -cp "$cp" bench.FilterBench "$port" "${FILTER_ROUNDS:-6}" "${FILTER_SECONDS:-3}" "${CLIENTS:-8}" 2>&1 | grep -v '^SLF4J'
