#!/usr/bin/env bash
# The one loop over the test matrix's servers: runs a command once per
# server of $REDIS_SERVERS (space-separated; the Makefile exports its
# SERVERS so), with REDIS_SERVER set to that server, and stops at the first
# failure. It prints each run's time, and at the end all of them.
#
#   scripts/each-server.sh <what> <command>
#
# <command> is one bash command line (it may cd, or set variables).
set -euo pipefail
what=${1:?usage: scripts/each-server.sh <what> <command>}
command=${2:?usage: scripts/each-server.sh <what> <command>}
if [ -z "${REDIS_SERVERS:-}" ]; then
    echo "REDIS_SERVERS is empty: run this through make (its SERVERS), or set it" >&2
    exit 2
fi
times=()
for server in $REDIS_SERVERS; do
    echo "== $what against $server"
    start=$SECONDS
    if ! REDIS_SERVER=$server bash -c "$command"; then
        echo "== FAILED: $what against $server" >&2
        exit 1
    fi
    times+=("$server: $((SECONDS - start)) s")
done
echo "== $what: $(IFS=,; echo "${times[*]}" | sed 's/,/, /g')"
