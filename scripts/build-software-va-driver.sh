#!/usr/bin/env bash
# Builds the software VA driver used by the VA tests (tests/va-driver/) into
# OUTDIR/swiftvt_sw_drv_video.so; use it with LIBVA_DRIVER_NAME=swiftvt_sw LIBVA_DRIVERS_PATH=OUTDIR
# (scripts/with-software-va.sh does all of that). Rebuilds only when a source is newer than the
# library. Needs a C compiler ($CC, else gcc, else cc) and the development files of libva,
# libavcodec and libavutil.
#
#   scripts/build-software-va-driver.sh [OUTDIR]      # default: .build-va-driver/
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
outdir="${1:-$root/.build-va-driver}"
src="$root/tests/va-driver"
lib="$outdir/swiftvt_sw_drv_video.so"

sources=("$src"/*.c)
stale=0
if [ ! -f "$lib" ]; then
    stale=1
else
    for file in "$src"/*.c "$src"/*.h "$0"; do
        if [ "$file" -nt "$lib" ]; then stale=1; break; fi
    done
fi
if [ "$stale" = 0 ]; then
    exit 0
fi

for package in libva libavcodec libavutil; do
    if ! pkg-config --exists "$package"; then
        echo "build-software-va-driver: pkg-config cannot find $package (install libva-dev, libavcodec-dev)" >&2
        exit 1
    fi
done
compiler="${CC:-}"
if [ -z "$compiler" ]; then
    compiler=gcc
    command -v gcc >/dev/null 2>&1 || compiler=cc
fi
mkdir -p "$outdir"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$compiler" -std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
    -Wl,--no-undefined -Wl,-z,defs \
    $(pkg-config --cflags libva libavcodec libavutil) \
    -o "$lib.tmp" "${sources[@]}" \
    $(pkg-config --libs libva libavcodec libavutil) -lpthread
mv -f "$lib.tmp" "$lib"
echo "build-software-va-driver: built $lib" >&2
