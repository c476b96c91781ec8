#!/usr/bin/env bash
# Prepares the folder that checks SwiftVT's NVDEC path on an NVIDIA GPU host without GStreamer and
# without package access (issue 34): ../shared/gpu/make-bundle.sh's bundle (Debian 12's GStreamer
# runtime, GStreamer's NVDEC elements as the reference, the plugin), plus scripts/cuda-check.py and
# check-cuda.sh, which runs it with the bundle's gst-launch-1.0 against the host's NVIDIA driver.
#
#   scripts/make-gpu-bundle.sh build/libgstswiftvt.so .gpu        # here, on Debian 12
#   then on the GPU host:  .gpu/check-cuda.sh CORPUS_DIR [--quick]  # CORPUS_DIR holds h264/
#
# check-cuda.sh prints vtdec_hw's registration, every undamaged corpus stream through
# `vtdec hardware=require hardware-device=cuda` and through nvh264dec against ref_md5, and the
# throughput of one pipeline and of 8 in parallel with CPU time per frame and peak RSS.
set -euo pipefail
plugin=${1:?usage: make-gpu-bundle.sh PLUGIN OUTDIR}
out=${2:?usage: make-gpu-bundle.sh PLUGIN OUTDIR}
root="$(cd "$(dirname "$0")/.." && pwd)"
shared_gpu="${SWIFTVT_SHARED_GPU:-$root/../shared/gpu}"
[ -x "$shared_gpu/make-bundle.sh" ] || { echo "make-gpu-bundle: no $shared_gpu/make-bundle.sh" >&2; exit 1; }
bash "$shared_gpu/make-bundle.sh" "$plugin" "$out"
cp "$root/scripts/cuda-check.py" "$out/cuda-check.py"
cat >"$out/check-cuda.sh" <<'SCRIPT'
#!/bin/bash
# SwiftVT's NVDEC path on this host's NVIDIA GPU with the bundle's GStreamer (scripts/make-gpu-bundle.sh).
# usage: check-cuda.sh CORPUS_DIR [--quick] [--parallel N]
set -u
H=$(cd "$(dirname "$0")" && pwd)
corpus=${1:?corpus folder (holding h264/MANIFEST.tsv)}; shift
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
export LD_LIBRARY_PATH=$H/lib:/usr/local/nvidia/lib64:/usr/local/nvidia/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_PLUGIN_SYSTEM_PATH=$H/gst GST_PLUGIN_PATH= GST_PLUGIN_SCANNER=$H/bin/gst-plugin-scanner
export GST_REGISTRY=/tmp/swiftvt-cuda-registry.bin
rm -f "$GST_REGISTRY"
unset DISPLAY
exec python3 "$H/cuda-check.py" "$corpus" --launch "$H/bin/gst-launch-1.0" --inspect "$H/bin/gst-inspect-1.0" "$@"
SCRIPT
chmod +x "$out/check-cuda.sh"
echo "make-gpu-bundle: $out/check-cuda.sh CORPUS_DIR runs the NVDEC check"
