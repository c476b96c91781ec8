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

# shellcheck source=scripts/lib/build-test-driver.sh
source "$root/scripts/lib/build-test-driver.sh"
if ! build_is_stale "$cuda $nvcuvid" "$src"/*.c "$src"/*.h "${va_sources[@]}" "$va"/*.h "$0" \
    "$root/scripts/lib/build-test-driver.sh"; then
    exit 0
fi

if [ ! -f /usr/include/ffnvcodec/dynlink_cuda.h ] && ! pkg-config --exists ffnvcodec; then
    echo "build-software-cuda: the ffnvcodec headers are missing (install libffmpeg-nvenc-dev)" >&2
    exit 1
fi
build_require_packages build-software-cuda libva libavcodec libavutil
mkdir -p "$outdir"
"$build_compiler" "${build_flags[@]}" -Wl,-soname,libcuda.so.1 -o "$cuda.tmp" "$src/cuda.c" -lpthread
mv -f "$cuda.tmp" "$cuda"
ln -sf libcuda.so.1 "$outdir/libcuda.so"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
"$build_compiler" "${build_flags[@]}" -Wl,-soname,libnvcuvid.so.1 \
    $(pkg-config --cflags libva libavcodec libavutil) \
    -o "$nvcuvid.tmp" "$src/nvcuvid.c" "$src/h264_cuvid.c" "${va_sources[@]}" \
    -L"$outdir" -l:libcuda.so.1 \
    $(pkg-config --libs libavcodec libavutil) -lpthread
mv -f "$nvcuvid.tmp" "$nvcuvid"
ln -sf libnvcuvid.so.1 "$outdir/libnvcuvid.so"
echo "build-software-cuda: built $cuda and $nvcuvid" >&2
