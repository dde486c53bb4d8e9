#!/usr/bin/env bash
# make dist's steps, into dist/ (gitignored). The tools come from
# `scripts/deps.sh --dist` (tmp/tools/); this script installs nothing.
#
#   scripts/dist.sh module   dist/redis-ratelimit-<version>-x86_64-linux-gnu.tar.gz:
#                            the module built for glibc 2.17 and newer
#                            (cargo zigbuild), LICENSE, THIRD-PARTY-LICENSES.txt,
#                            INSTALL, ratelimit.conf (a loadmodule snippet),
#                            CHANGELOG.md
#   scripts/dist.sh deb      dist/redis-ratelimit_<version>-1_amd64.deb, from
#                            the module that `module` built
#   scripts/dist.sh sums     dist/SHA256SUMS of every other file in dist/
#
# Every file's time is the last commit's (SOURCE_DATE_EPOCH), owners are
# root, and archive members are sorted, so that two runs on one commit give
# the same bytes; the build maps the checkout's and cargo's paths to fixed
# names for the same reason.
set -euo pipefail
cd "$(dirname "$0")/.."

ZIGBUILD_VERSION=0.24.0
ZIGLANG_VERSION=0.17.0
CARGO_ABOUT_VERSION=0.9.3
TARGET=x86_64-unknown-linux-gnu
GLIBC=2.17

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
name=redis-ratelimit-$version-x86_64-linux-gnu
built=target/$TARGET/release/libredis_ratelimit.so
stage=target/dist
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export TZ=UTC LC_ALL=C

zig_dir=tmp/tools/zigbuild-$ZIGBUILD_VERSION-zig-$ZIGLANG_VERSION
about=tmp/tools/cargo-about-$CARGO_ABOUT_VERSION/bin/cargo-about
need() {
    if [ ! -x "$1" ]; then
        echo "$1 is missing: run scripts/deps.sh --dist (make dist runs it)" >&2
        exit 1
    fi
}

# A deterministic tar.gz of one directory: tarball <output> <dir> <member name>
tarball() {
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
        --mode='u+rwX,go+rX,go-w' --format=gnu -C "$(dirname "$2")" -cf - "$3" | gzip -9 -n >"$1"
}

build_module() {
    need "$zig_dir/bin/cargo-zigbuild"
    need "$zig_dir/ziglang/zig"
    local registry=${CARGO_HOME:-$HOME/.cargo}/registry/src
    # RUSTFLAGS applies to the target's crates only (with --target), so the
    # host's build scripts and the normal build keep their own cache.
    # Run from target/: zig names its library directory relative to the
    # working directory when that directory holds it (tmp/tools/ is under
    # the checkout), and bindgen, which runs elsewhere, then misses zig's
    # headers. From target/ zig gives absolute paths.
    mkdir -p target
    (
        cd target &&
            PATH="$OLDPWD/$zig_dir/bin:$PATH" CARGO_ZIGBUILD_ZIG_PATH="$OLDPWD/$zig_dir/ziglang/zig" \
            RUSTFLAGS="--remap-path-prefix=$OLDPWD=/build/redis-ratelimit --remap-path-prefix=$registry=/cargo/registry/src" \
            cargo zigbuild --quiet --release --locked --manifest-path ../Cargo.toml --target "$TARGET.$GLIBC"
    )
}

third_party() {
    need "$about"
    "$about" generate --locked --offline -c packaging/about.toml -o "$1" packaging/third-party.hbs
}

module() {
    build_module
    rm -rf "$stage/$name"
    mkdir -p "$stage/$name" dist
    install -m 0755 "$built" "$stage/$name/libredis_ratelimit.so"
    install -m 0644 LICENSE CHANGELOG.md "$stage/$name/"
    third_party "$stage/$name/THIRD-PARTY-LICENSES.txt"
    sed "s/@VERSION@/$version/" packaging/INSTALL >"$stage/$name/INSTALL"
    sed "s|@MODULE_PATH@|/usr/lib/redis/modules/libredis_ratelimit.so|" packaging/ratelimit.conf \
        >"$stage/$name/ratelimit.conf"
    tarball "dist/$name.tar.gz" "$stage/$name" "$name"
    echo "dist/$name.tar.gz"
}

deb() {
    if [ ! -f "$stage/$name/libredis_ratelimit.so" ]; then
        echo "$stage/$name is missing: run scripts/dist.sh module first (make dist does)" >&2
        exit 1
    fi
    local root=$stage/deb doc=usr/share/doc/redis-ratelimit
    local out=dist/redis-ratelimit_${version}-1_amd64.deb
    rm -rf "$root"
    mkdir -p "$root/DEBIAN" "$root/usr/lib/redis/modules" "$root/etc/redis/modules.d" "$root/$doc"
    # 0755: Redis refuses to load a module file without execute permission.
    install -m 0755 "$stage/$name/libredis_ratelimit.so" "$root/usr/lib/redis/modules/"
    sed "s|@MODULE_PATH@|/usr/lib/redis/modules/libredis_ratelimit.so|" packaging/ratelimit.conf \
        >"$root/etc/redis/modules.d/ratelimit.conf"
    {
        cat packaging/deb/copyright.in
        sed -n '/^Redistribution/,$p' LICENSE | sed 's/^$/./; s/^/ /'
    } >"$root/$doc/copyright"
    install -m 0644 README.md "$root/$doc/"
    gzip -9 -n -c CHANGELOG.md >"$root/$doc/CHANGELOG.md.gz"
    gzip -9 -n -c "$stage/$name/THIRD-PARTY-LICENSES.txt" >"$root/$doc/THIRD-PARTY-LICENSES.txt.gz"
    cp -r docs "$root/$doc/docs"
    echo /etc/redis/modules.d/ratelimit.conf >"$root/DEBIAN/conffiles"
    install -m 0755 packaging/deb/postrm "$root/DEBIAN/postrm"
    local size
    size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
    sed "s/@VERSION@/$version/; s/@INSTALLED_SIZE@/$size/" packaging/deb/control.in >"$root/DEBIAN/control"
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
        xargs md5sum >DEBIAN/md5sums)
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f ! -path '*/DEBIAN/postrm' ! -name '*.so' -exec chmod 0644 {} +
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
    echo "$out"
}

sums() {
    (cd dist && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | sort |
        xargs -r sha256sum >SHA256SUMS)
    echo dist/SHA256SUMS
}

case "${1:-}" in
    module) module ;;
    deb) deb ;;
    sums) sums ;;
    *) echo "usage: scripts/dist.sh module|deb|sums" >&2; exit 2 ;;
esac
