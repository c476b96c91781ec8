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
# shellcheck source=scripts/lib/build-test-driver.sh
source "$root/scripts/lib/build-test-driver.sh"
if ! build_is_stale "$lib" "$src"/*.c "$src"/*.h "$0" "$root/scripts/lib/build-test-driver.sh"; then
    exit 0
fi
build_require_packages build-software-va-driver libva libavcodec libavutil
mkdir -p "$outdir"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$build_compiler" "${build_flags[@]}" \
    $(pkg-config --cflags libva libavcodec libavutil) \
    -o "$lib.tmp" "${sources[@]}" \
    $(pkg-config --libs libva libavcodec libavutil) -lpthread
mv -f "$lib.tmp" "$lib"
echo "build-software-va-driver: built $lib" >&2
