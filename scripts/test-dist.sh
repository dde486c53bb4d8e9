#!/usr/bin/env bash
# make test's checks of what make dist built (run after it):
#   - dist/SHA256SUMS matches every file it lists, and lists the tarball
#     and the Debian package;
#   - the tarball holds the module, LICENSE, THIRD-PARTY-LICENSES.txt (with
#     every crate of the module's dependency graph), INSTALL, ratelimit.conf
#     and CHANGELOG.md;
#   - the module needs no glibc symbol version above GLIBC_2.17 (the
#     manylinux2014 baseline), nor any library beyond glibc's and libgcc_s;
#   - the Debian package holds the module, the conffile and the copyright.
# The tarball is extracted into the directory given (emptied first); the
# module's path is written to <dir>/module-path for the smoke run of the
# integration tests (RATELIMIT_MODULE, tests/common).
#
#   scripts/test-dist.sh <dir>
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/test-dist.sh <dir>}
BASELINE=2.17

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
name=redis-ratelimit-$version-x86_64-linux-gnu
tarball=dist/$name.tar.gz
deb=dist/redis-ratelimit_${version}-1_amd64.deb
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
passed=0
ok() {
    echo "ok: $*"
    passed=$((passed + 1))
}
for tool in readelf dpkg-deb sha256sum; do
    command -v $tool >/dev/null 2>&1 || fail "$tool is missing: run scripts/deps.sh --dist"
done
for f in "$tarball" "$deb" dist/SHA256SUMS; do
    [ -f "$f" ] || fail "$f is missing: run make dist"
done

(cd dist && sha256sum --check --quiet SHA256SUMS) || fail "dist/SHA256SUMS does not match dist/"
for f in "$tarball" "$deb"; do
    grep -q "  ${f#dist/}\$" dist/SHA256SUMS || fail "dist/SHA256SUMS does not list $f"
done
ok "dist/SHA256SUMS matches, and lists the tarball and the package"

rm -rf "$out"
mkdir -p "$out"
tar -xzf "$tarball" -C "$out"
dir=$out/$name
for f in libredis_ratelimit.so LICENSE THIRD-PARTY-LICENSES.txt INSTALL ratelimit.conf CHANGELOG.md; do
    [ -s "$dir/$f" ] || fail "$tarball has no $name/$f"
done
[ -x "$dir/libredis_ratelimit.so" ] || fail "the module is not executable (Redis refuses to load it so)"
extra=$(tar -tzf "$tarball" | grep -v "^$name/\(\|libredis_ratelimit.so\|LICENSE\|THIRD-PARTY-LICENSES.txt\|INSTALL\|ratelimit.conf\|CHANGELOG.md\)\$" || true)
[ -z "$extra" ] || fail "$tarball holds files nobody listed: $extra"
grep -q "^## \[$version\]" "$dir/CHANGELOG.md" || fail "CHANGELOG.md has no section for $version"
grep -q "^loadmodule /" "$dir/ratelimit.conf" || fail "ratelimit.conf has no loadmodule line with an absolute path"
ok "the tarball holds the module, LICENSE, THIRD-PARTY-LICENSES.txt, INSTALL, ratelimit.conf, CHANGELOG.md"

# Every crate of the module's normal dependency graph has its license in
# the file (the file may name a proc-macro crate too; the graph is what
# the .so is linked from).
missing=()
while read -r crate ver; do
    grep -q -- "- $crate ${ver#v}\b" "$dir/THIRD-PARTY-LICENSES.txt" || missing+=("$crate $ver")
done < <(cargo tree --quiet --locked --offline -e normal --prefix none -f '{p}' --target x86_64-unknown-linux-gnu |
    sed 's/ (\*)//; s/ (proc-macro)//; s/ (\/.*)//' | awk '$1 != "redis-ratelimit" {print $1, $2}' | sort -u)
[ ${#missing[@]} -eq 0 ] || fail "THIRD-PARTY-LICENSES.txt lacks: ${missing[*]}"
grep -q "redis-module " "$dir/THIRD-PARTY-LICENSES.txt" || fail "THIRD-PARTY-LICENSES.txt does not name redis-module"
if grep -q -E -- "- (redis|proptest|tempfile|crc|serde_json|bindgen|cc) [0-9]" "$dir/THIRD-PARTY-LICENSES.txt"; then
    fail "THIRD-PARTY-LICENSES.txt names a test-only or build-time crate"
fi
ok "THIRD-PARTY-LICENSES.txt covers every crate of the module's graph, and no test-only or build-time one"

# The glibc versions the module needs: its version-needs section.
so=$dir/libredis_ratelimit.so
needs=$(readelf --version-info --wide "$so" | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/Name: GLIBC_//' | sort -u -V)
[ -n "$needs" ] || fail "readelf found no GLIBC version in $so: is it the module?"
highest=$(echo "$needs" | tail -n 1)
if [ "$(printf '%s\n%s\n' "$highest" "$BASELINE" | sort -V | tail -n 1)" != "$BASELINE" ]; then
    fail "$so needs GLIBC_$highest, above the baseline GLIBC_$BASELINE: $(echo $needs)"
fi
libs=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $libs; do
    case $lib in
        libc.so.6 | ld-linux-x86-64.so.2 | libpthread.so.0 | libdl.so.2 | libm.so.6 | librt.so.1 | libgcc_s.so.1) ;;
        *) fail "$so needs $lib, which a glibc system may lack" ;;
    esac
done
ok "the module needs GLIBC_$highest at most (baseline $BASELINE); libraries: $libs"

listing=$(dpkg-deb --contents "$deb")
for path in ./usr/lib/redis/modules/libredis_ratelimit.so ./etc/redis/modules.d/ratelimit.conf \
    ./usr/share/doc/redis-ratelimit/copyright ./usr/share/doc/redis-ratelimit/THIRD-PARTY-LICENSES.txt.gz; do
    echo "$listing" | grep -q " $path\$" || fail "$deb has no $path"
done
echo "$listing" | grep -q '^-rwxr-xr-x root/root .* ./usr/lib/redis/modules/libredis_ratelimit.so$' ||
    fail "$deb's module is not root's with mode 0755"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)" = /etc/redis/modules.d/ratelimit.conf ] ||
    fail "$deb does not mark /etc/redis/modules.d/ratelimit.conf as a conffile"
cmp -s <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/lib/redis/modules/libredis_ratelimit.so) "$so" ||
    fail "$deb's module is not the tarball's"
ok "the Debian package holds the tarball's module (0755), the conffile, the copyright and the licenses"

realpath "$so" >"$out/module-path"
echo "$passed passed, 0 failed"
