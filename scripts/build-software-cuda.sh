#!/usr/bin/env bash
# Builds the software CUDA double used by the CUDA/NVDEC tests (tests/cuda-driver/) into OUTDIR:
# libcuda.so.1 and libnvcuvid.so.1 (with the libcuda.so / libnvcuvid.so links), the real names
# and ABI of NVIDIA's CUDA driver API and NVDEC libraries; put OUTDIR first in LD_LIBRARY_PATH
# (scripts/with-software-cuda.sh does it). libnvcuvid decodes H.264 with the software VA
# driver's code, compiled from tests/va-driver/. Rebuilds only when a source is newer than the
# libraries. Needs a C compiler ($CC, else gcc, else cc), the ffnvcodec headers (Debian
# libffmpeg-nvenc-dev) and the development files of libva, libavcodec and libavutil.
#
#   scripts/build-software-cuda.sh [OUTDIR]      # default: .build-cuda-driver/
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
outdir="${1:-$root/.build-cuda-driver}"
src="$root/tests/cuda-driver"
va="$root/tests/va-driver"
cuda="$outdir/libcuda.so.1"
nvcuvid="$outdir/libnvcuvid.so.1"
# The VA driver's H.264 engine (not its libva entry points).
va_sources=("$va/avdecode.c" "$va/bits.c" "$va/h264_ps.c" "$va/h264_rebuild.c" "$va/h264_slice.c" "$va/h264_refs.c")

stale=0
if [ ! -f "$cuda" ] || [ ! -f "$nvcuvid" ]; then
    stale=1
else
    for file in "$src"/*.c "$src"/*.h "${va_sources[@]}" "$va"/*.h "$0"; do
        if [ "$file" -nt "$cuda" ] || [ "$file" -nt "$nvcuvid" ]; then stale=1; break; fi
    done
fi
if [ "$stale" = 0 ]; then
    exit 0
fi

if [ ! -f /usr/include/ffnvcodec/dynlink_cuda.h ] && ! pkg-config --exists ffnvcodec; then
    echo "build-software-cuda: the ffnvcodec headers are missing (install libffmpeg-nvenc-dev)" >&2
    exit 1
fi
for package in libva libavcodec libavutil; do
    if ! pkg-config --exists "$package"; then
        echo "build-software-cuda: pkg-config cannot find $package (install libva-dev, libavcodec-dev)" >&2
        exit 1
    fi
done
compiler="${CC:-}"
if [ -z "$compiler" ]; then
    compiler=gcc
    command -v gcc >/dev/null 2>&1 || compiler=cc
fi
mkdir -p "$outdir"
# shellcheck disable=SC2054 # the commas are the linker's (-Wl,...)
flags=(-std=c11 -O2 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -Wl,--no-undefined -Wl,-z,defs)
"$compiler" "${flags[@]}" -Wl,-soname,libcuda.so.1 -o "$cuda.tmp" "$src/cuda.c" -lpthread
mv -f "$cuda.tmp" "$cuda"
ln -sf libcuda.so.1 "$outdir/libcuda.so"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$compiler" "${flags[@]}" -Wl,-soname,libnvcuvid.so.1 \
    $(pkg-config --cflags libva libavcodec libavutil) \
    -o "$nvcuvid.tmp" "$src/nvcuvid.c" "$src/h264_cuvid.c" "${va_sources[@]}" \
    -L"$outdir" -l:libcuda.so.1 \
    $(pkg-config --libs libavcodec libavutil) -lpthread
mv -f "$nvcuvid.tmp" "$nvcuvid"
ln -sf libnvcuvid.so.1 "$outdir/libnvcuvid.so"
echo "build-software-cuda: built $cuda and $nvcuvid" >&2
