#!/usr/bin/env bash
# Installs what building and testing need and a fresh Debian machine lacks:
# redis-server, and libclang for the bindgen step of the redis-module crate.
# As root it installs them with apt-get; otherwise it prints the command.
set -euo pipefail

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

[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${missing[*]} ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "Missing: ${missing[*]}. Install them as root:" >&2
    echo "    sudo sh -c '$cmd'" >&2
    exit 1
fi
