#!/usr/bin/env bash
# Runs a command against SwiftVT's software CUDA double (tests/cuda-driver/): builds it if
# needed, puts its folder first in LD_LIBRARY_PATH so that dlopen("libcuda.so.1") and
# dlopen("libnvcuvid.so.1") in any client (FFmpeg's -hwaccel cuda, GStreamer's nvcodec plugin)
# find the double, runs the command and returns its exit status.
#
#   scripts/with-software-cuda.sh COMMAND [ARGS...]
#   scripts/with-software-cuda.sh ffmpeg -hwaccel cuda -i STREAM -f rawvideo -pix_fmt yuv420p out.yuv
#
# Environment: SWIFTVT_CUDA_DRIVER_DIR (where the double is built; default .build-cuda-driver/ in
# the repository); the double's own variables (SWIFTVT_CUDA_LOG, SWIFTVT_CUDA_REPORT,
# SWIFTVT_CUDA_FAIL...) pass through, see tests/cuda-driver/README.md.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
driver_dir="${SWIFTVT_CUDA_DRIVER_DIR:-$root/.build-cuda-driver}"
bash "$root/scripts/build-software-cuda.sh" "$driver_dir"
driver_dir="$(cd "$driver_dir" && pwd)"
export LD_LIBRARY_PATH="$driver_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
"$@" || status=$?
exit "$status"
