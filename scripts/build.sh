#!/usr/bin/env bash
# Installs what is missing and builds the release plugin through Meson (and SwiftPM) into
# build/libgstswiftvt.so. Used by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
    meson setup build >/dev/null
fi
meson compile -C build
