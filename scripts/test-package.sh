#!/usr/bin/env bash
# make test-package: the Debian package of dist/ on this machine's Debian
# redis-server, as root (CI runs it after make test; it installs and
# removes a package, so make test does not):
#   1. dpkg -i the package; its module is under a path that the
#      redis-server unit's ExecPaths= lets the server map (its NoExecPaths=/
#      forbids every other), outside what ProtectHome= hides;
#   2. /etc/redis/redis.conf gets the package's include line, as the README
#      says, and Debian's redis-server starts with that configuration, as
#      the unit starts it (as the redis user, in the foreground), on a free
#      port and with a directory, pid and log file of the test's own so
#      that a running redis-server service is left alone;
#   3. every command the module registered is called once;
#   4. the server stops, redis.conf is restored, the package is purged, and
#      nothing it installed or created is left; the machine is as found.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
deb=$PWD/dist/redis-ratelimit_${version}-1_amd64.deb
conf=/etc/redis/redis.conf
unit=/lib/systemd/system/redis-server.service
module=/usr/lib/redis/modules/libredis_ratelimit.so
snippet=/etc/redis/modules.d/ratelimit.conf
include_line="include $snippet"

passed=0
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() {
    echo "ok: $*"
    passed=$((passed + 1))
}

[ "$(id -u)" -eq 0 ] || fail "run as root (it installs and purges the package): sudo make test-package"
[ -f "$deb" ] || fail "$deb is missing: run make dist"
for tool in dpkg redis-server redis-cli setpriv; do
    command -v $tool >/dev/null 2>&1 || fail "$tool is missing: run scripts/deps.sh --test"
done
[ -f "$conf" ] && [ -f "$unit" ] || fail "$conf or $unit is missing: install Debian's redis-server (scripts/deps.sh)"
if dpkg-query -W -f '${Status}' redis-ratelimit 2>/dev/null | grep -q 'installed\|config-files'; then
    fail "redis-ratelimit is installed already: this test would remove it (dpkg --purge redis-ratelimit first)"
fi
for path in "$module" "$snippet" /usr/share/doc/redis-ratelimit; do
    [ ! -e "$path" ] || fail "$path exists already, from no package: remove it first"
done

# What the machine holds before, to compare with after.
work=$(mktemp -d /tmp/redis-ratelimit-package.XXXXXX)
cp -a "$conf" "$work/redis.conf.orig"
conf_sum=$(sha256sum <"$conf")
dirs_before=$(for d in /usr/lib/redis /usr/lib/redis/modules /etc/redis/modules.d; do
    [ -d "$d" ] && echo "$d"
done || true)
pid=
cleanup() {
    set +e
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    cp -a "$work/redis.conf.orig" "$conf"
    dpkg-query -W redis-ratelimit >/dev/null 2>&1 && dpkg --purge redis-ratelimit >/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# 1. Install.
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i $deb"; }
[ -x "$module" ] || fail "$module is not installed (or not executable)"
[ -f "$snippet" ] || fail "$snippet is not installed"
grep -q "^loadmodule $module\$" "$snippet" || fail "$snippet does not load $module"
ok "dpkg -i installed $module and $snippet"

exec_paths=$(sed -n 's/^ExecPaths=//p' "$unit" | tr ' ' '\n')
grep -q '^NoExecPaths=/$' "$unit" || fail "$unit has no NoExecPaths=/ any more: check what it allows"
allowed=no
for p in $exec_paths; do
    case $module in "$p"/*) allowed=$p ;; esac
done
[ $allowed != no ] || fail "$module is under none of the unit's ExecPaths ($(echo $exec_paths))"
case $module in /home/* | /root/* | /run/user/*) fail "$module is under what ProtectHome= hides" ;; esac
ok "the unit's ExecPaths= lets redis-server map $module (under $allowed)"

# 2. Load it the way the README says, and start the server as the unit does.
grep -qxF "$include_line" "$conf" && fail "$conf includes $snippet already"
echo "$include_line" >>"$conf"
port=
for p in $(seq 16379 16479); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        port=$p
        break
    fi
done
[ -n "$port" ] || fail "no free port in 16379-16479"
chown redis:redis "$work"
# setpriv runs the server itself as the redis user (no process between),
# as systemd's User=redis does.
setpriv --reuid=redis --regid=redis --init-groups redis-server "$conf" --daemonize no --supervised no --port "$port" \
    --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log" --save "" --appendonly no &
pid=$!
cli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 100); do
    [ "$(cli PING 2>/dev/null)" = PONG ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$work/redis.log" >&2; fail "redis-server stopped at start"; }
    sleep 0.1
done
[ "$(cli PING 2>/dev/null)" = PONG ] || { cat "$work/redis.log" >&2; fail "redis-server did not answer within 10 s"; }
[ "$(stat -c %U /proc/$pid)" = redis ] || fail "redis-server does not run as the redis user"
cli MODULE LIST | grep -qx ratelimit || fail "MODULE LIST has no ratelimit: $(cli MODULE LIST | tr '\n' ' ')"
ok "redis-server $(redis-server --version | grep -o 'v=[0-9.]*') started with $conf as the redis user on port $port, module loaded"

# 3. Every command the module registered, once.
expect() {
    local want=$1
    shift
    local got
    got=$(cli "$@" 2>&1 | tr '\n' ' ')
    case "$got" in
        "$want"*) ;;
        *) fail "$* answered: $got (expected it to start with: $want)" ;;
    esac
    called+=("$(echo "$1" | tr '[:upper:]' '[:lower:]')")
}
called=()
expect "0 3 2 -1 " RL.THROTTLE rl:pkg:t 2 1 60
expect "0 10 9 -1 60 " RL.SLIDE rl:pkg:s 10 60
expect "0 100 99 -1 " RL.SLICE rl:pkg:c 100 60 12
expect "0 2 1 -1 30 " RL.LEASE rl:pkg:l 2 30 job-1
expect "1 " RL.RELEASE rl:pkg:l job-1
expect "0 1000 999 -1 " RL.QUOTA rl:pkg:q 1000 DAY TZ Europe/Berlin
expect "0 " RL.ALLOW 2 rl:{pkg}:a rl:{pkg}:b THROTTLE 2 1 60 SLIDE 10 60
expect "0 " RL.PEEK 2 rl:{pkg}:a rl:{pkg}:b THROTTLE 2 1 60 SLIDE 10 60
expect "type slide ttl " RL.INSPECT rl:pkg:s
expect "0 10 10 -1 0 " RL.REFUND rl:pkg:s SLIDE 10 60 1
expect "0 10 7 -1 60 " RL.CHARGE rl:pkg:s SLIDE 10 60 3
expect "0 1 0 -1 60 " RL.THROTTLE rl:pkg:top 0 1 60 BLOCK 600
expect "1 1 0 600 600 " RL.THROTTLE rl:pkg:top 0 1 60 BLOCK 600
expect "rl:pkg:top " RL.TOP COUNT 1
expect "ERR RL.STATE is accepted only from the master or the AOF" RL.STATE rl:pkg:x x
registered=$(cli COMMAND LIST FILTERBY MODULE ratelimit | tr '[:upper:]' '[:lower:]' | sort)
[ -n "$registered" ] || fail "COMMAND LIST FILTERBY MODULE ratelimit is empty"
for c in $registered; do
    printf '%s\n' "${called[@]}" | grep -qx "$c" || fail "$c is registered but this test does not call it"
done
ok "every registered command answered: $(echo $registered)"

# 4. Stop, restore, purge, and compare.
cli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "redis-server did not stop"
wait "$pid" 2>/dev/null || true
pid=
cp -a "$work/redis.conf.orig" "$conf"
[ "$(sha256sum <"$conf")" = "$conf_sum" ] || fail "$conf is not restored"
ok "the server stopped and $conf is as it was"

dpkg --purge redis-ratelimit >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg --purge"; }
dpkg-query -W redis-ratelimit >/dev/null 2>&1 && fail "dpkg still knows redis-ratelimit after the purge"
for path in "$module" "$snippet" /usr/share/doc/redis-ratelimit; do
    [ ! -e "$path" ] || fail "$path is left after the purge"
done
ls /etc/redis/modules.d/ratelimit.conf.dpkg-* >/dev/null 2>&1 && fail "dpkg's copies of $snippet are left"
dirs_after=$(for d in /usr/lib/redis /usr/lib/redis/modules /etc/redis/modules.d; do
    [ -d "$d" ] && echo "$d"
done || true)
[ "$dirs_after" = "$dirs_before" ] || fail "directories before the install: [$dirs_before], after the purge: [$dirs_after]"
ok "dpkg --purge left nothing: the module, the snippet, the docs and the directories it made are gone"

echo "$passed passed, 0 failed"
