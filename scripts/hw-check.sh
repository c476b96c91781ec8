#!/usr/bin/env bash
# SwiftVT on this machine's VA-API device, in one command, with FFmpeg's VA-API client beside it
# as the reference:
#
#   scripts/hw-check.sh              # the machine's GPU (installs vainfo and the VA driver it needs)
#   scripts/hw-check.sh --software   # the project's software VA driver on Xvfb (no GPU needed)
#   scripts/hw-check.sh --quick      # five corpus streams instead of all
#   scripts/hw-check.sh --cuda       # the NVIDIA GPU through CUDA/NVDEC instead (scripts/cuda-check.py)
#   scripts/hw-check.sh --cuda --software   # the same on the software CUDA double (no GPU needed)
#
# With --cuda: vtdec_hw's registration, every corpus stream through `vtdec hardware=require
# hardware-device=cuda` and through GStreamer's nvh264dec on the same GPU (nvh264sldec on the
# double, which has no NVIDIA parser) against ref_md5, and throughput of one pipeline and of 8 in
# parallel on 1080p x20 and 720p x40 with CPU time per frame and peak RSS (scripts/cuda-check.py).
# On a GPU host without packages, use the bundle of scripts/make-gpu-bundle.sh instead.
#
# Prints, section by section:
#  1. the VA driver and its H.264 profiles and entrypoints (vainfo);
#  2. the corpus through `vtdec hardware=require` and through FFmpeg's VA decoder: the MD5 of the
#     decoded frames against MANIFEST.tsv's ref_md5;
#  3. `vtenc hardware=require` round trips at 2000 kbit/s against FFmpeg's h264_vaapi at the same
#     rate: PSNR-Y, bit rate and key frames of each output;
#  4. read-back speed: a 1080p stream decoded with vaDeriveImage and with vaGetImage
#     (SWIFTVT_VA_READBACK), frames per second of each;
#  5. encode frames per second with 1 and 4 pictures in flight (SWIFTVT_VA_ASYNC_DEPTH), and FFmpeg's
#     h264_vaapi at -async_depth 1 and 4;
#  6. LIBVA_TRACE on three streams: the picture, IQ matrix and slice parameters SwiftVT gave the
#     driver against FFmpeg's (scripts/va-trace-compare.py; surfaces and POC offsets normalised).
# A step that cannot run says what is missing; the script ends with a summary line and exits 1
# when a decode was not exact or a step failed.
#
# Installs with apt-get (sudo when not root): SwiftVT's build and test packages
# (scripts/install-deps.sh), vainfo, and the VA driver for the GPU found (Intel: intel-media-va-driver,
# AMD: mesa-va-drivers, NVIDIA: nvidia-vaapi-driver from contrib). Environment: SWIFTVT_CORPUS
# (default ../shared/corpus), SWIFTVT_PLUGIN (a built libgstswiftvt.so; default: build it).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
software=no
quick=no
cuda=no
for argument in "$@"; do
    case "$argument" in
    --software) software=yes ;;
    --quick) quick=yes ;;
    --cuda) cuda=yes ;;
    *) echo "hw-check: unknown argument $argument (use --software, --quick, --cuda)" >&2; exit 2 ;;
    esac
done
corpus="${SWIFTVT_CORPUS:-$root/../shared/corpus}"
manifest="$corpus/h264/MANIFEST.tsv"

if [ -z "${SWIFTVT_HW_CHECK_READY:-}" ]; then
    bash "$root/scripts/install-deps.sh" || { echo "hw-check: installing SwiftVT's packages failed (see above)" >&2; exit 1; }
    sudo_prefix=()
    [ "$(id -u)" != 0 ] && sudo_prefix=(sudo)
    wanted=(vainfo)
    if [ "$software" = no ]; then
        vendors="$(cat /sys/class/drm/renderD*/device/vendor 2>/dev/null | sort -u | tr '\n' ' ')"
        case "$vendors" in *0x8086*) wanted+=(intel-media-va-driver) ;; esac
        case "$vendors" in *0x1002*) wanted+=(mesa-va-drivers) ;; esac
        case "$vendors" in *0x10de*) wanted+=(nvidia-vaapi-driver) ;; esac
        [ -z "$vendors" ] && echo "hw-check: no GPU render node in /sys/class/drm (no /dev/dri/renderD*): use --software to check against the software VA driver"
    fi
    missing=()
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "hw-check: installing ${missing[*]}"
        if ! DEBIAN_FRONTEND=noninteractive "${sudo_prefix[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
            echo "hw-check: could not install ${missing[*]} (nvidia-vaapi-driver is in Debian's contrib section: add contrib to /etc/apt/sources.list); going on without"
        fi
    fi
    if [ -z "${SWIFTVT_PLUGIN:-}" ]; then
        (cd "$root" && bash scripts/build.sh >/dev/null) || { echo "hw-check: the plugin does not build (scripts/build.sh)" >&2; exit 1; }
        export SWIFTVT_PLUGIN="$root/build/libgstswiftvt.so"
    fi
    if [ "$cuda" = yes ] && [ "$software" = yes ]; then
        exec env SWIFTVT_HW_CHECK_READY=1 bash "$root/scripts/with-software-cuda.sh" bash "$0" "$@"
    fi
    if [ "$software" = yes ] && [ "$cuda" = no ]; then
        exec env SWIFTVT_HW_CHECK_READY=1 SWIFTVT_VA_DRIVER_DIR="${SWIFTVT_VA_DRIVER_DIR:-$root/build}" \
            bash "$root/scripts/with-software-va.sh" bash "$0" "$@"
    fi
    exec env SWIFTVT_HW_CHECK_READY=1 bash "$0" "$@"
fi

source "$root/pipelines/lib/plugin-env.sh"
work="$swiftvt_work_dir"
if [ "$cuda" = yes ]; then
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    # A registry of its own: the plugin registers vtdec_hw for the CUDA device found at the scan.
    export GST_REGISTRY="$work/cuda-registry.bin"
    reference=nvh264dec
    [ "$software" = yes ] && reference=nvh264sldec
    check_options=(--reference "$reference")
    [ "$quick" = yes ] && check_options+=(--quick)
    status=0
    /usr/bin/python3 "$root/scripts/cuda-check.py" "$corpus" "${check_options[@]}" || status=$?
    exit "$status"
fi
runner=(/usr/bin/python3 "$root/tests/lib/run-pipeline.py")
source "$root/tests/lib/va-report.sh"
problems=0
problem() { echo "hw-check: PROBLEM: $*"; problems=$((problems + 1)); }
# FFmpeg's VA device: the X11 display under --software (the driver is loaded for it), else the first render node.
# The software driver codes CAVLC only (its encoder writes I_PCM macroblocks, lossless): both
# encoders are asked for CAVLC there.
encode_options=()
ffmpeg_encode_options=()
if [ "$software" = yes ]; then
    ffmpeg_device=(-init_hw_device "vaapi=va:$DISPLAY,connection_type=x11")
    vainfo_display=(--display x11)
    encode_options=(entropy-mode=cavlc)
    ffmpeg_encode_options=(-coder cavlc)
else
    node=""
    for candidate in /dev/dri/renderD*; do # the first render node, if any
        if [ -e "$candidate" ]; then node="$candidate"; break; fi
    done
    ffmpeg_device=(-init_hw_device "vaapi=va:${node:-/dev/dri/renderD128}")
    vainfo_display=(--display drm --device "${node:-/dev/dri/renderD128}")
fi
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.3f", b - a }'; }

echo "== 1. the VA-API device"
if command -v vainfo >/dev/null 2>&1 && vainfo "${vainfo_display[@]}" >"$work/vainfo.txt" 2>&1; then
    grep -m1 "Driver version" "$work/vainfo.txt" || true
    grep "VAProfileH264" "$work/vainfo.txt" | sed 's/^ */    /'
    grep -q "VAProfileH264.*VAEntrypointVLD" "$work/vainfo.txt" || problem "the device offers no H.264 decoding (VAEntrypointVLD)"
else
    problem "vainfo failed: $(tail -2 "$work/vainfo.txt" 2>/dev/null | tr '\n' ' ')"
fi

echo
echo "== 2. the corpus: vtdec hardware=require and FFmpeg's VA decoder, MD5 of the decoded frames against ref_md5"
if [ ! -f "$manifest" ]; then
    problem "the corpus is not at $corpus (set SWIFTVT_CORPUS)"
else
    printf '%-44s %7s %-10s %-10s\n' stream frames SwiftVT FFmpeg
    exact=0 total=0
    while IFS=$'\t' read -r file _bytes _sha _width _height _profile frames ref_md5 _avdec; do
        [ "$file" = file ] && continue
        # Streams damaged on purpose (tests/lib/va-report.sh) have no reference decode to match.
        [[ "$va_damaged_streams" == *" $file "* ]] && continue
        [ "$quick" = yes ] && [ "$total" -ge 5 ] && break
        total=$((total + 1))
        stream="$corpus/h264/$file"
        ours="failed"
        if "${runner[@]}" --timeout 300 -- filesrc location="$stream" ! h264parse-to-avcc ! vtdec hardware=require \
                ! video/x-raw,format=I420 ! filesink location="$work/ours.yuv" >"$work/decode.log" 2>&1; then
            ours="$([ "$(md5sum <"$work/ours.yuv" | cut -d' ' -f1)" = "$ref_md5" ] && echo exact || echo DIFFERS)"
        fi
        theirs="failed"
        if ffmpeg -nostdin -v error "${ffmpeg_device[@]}" -hwaccel vaapi -hwaccel_device va -i "$stream" \
                -f rawvideo -pix_fmt yuv420p "$work/theirs.yuv" -y >/dev/null 2>&1; then
            theirs="$([ "$(md5sum <"$work/theirs.yuv" | cut -d' ' -f1)" = "$ref_md5" ] && echo exact || echo DIFFERS)"
        fi
        [ "$ours" = exact ] && exact=$((exact + 1))
        [ "$ours" != exact ] && [ "$theirs" = exact ] && problem "$file: FFmpeg's VA client decodes it exactly, SwiftVT $ours"
        printf '%-44s %7s %-10s %-10s\n' "$file" "$frames" "$ours" "$theirs"
    done <"$manifest"
    echo "SwiftVT exact on $exact of $total streams"
fi

echo
echo "== 3. vtenc hardware=require and FFmpeg's h264_vaapi at 2000 kbit/s, 1280x720, 120 frames"
printf '%-10s %-9s %10s %12s %6s\n' pattern encoder PSNR-Y kbit/s keys
for pattern in smpte ball; do
    gst-launch-1.0 -q videotestsrc num-buffers=120 pattern="$pattern" ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1 \
        ! filesink location="$work/source.yuv" || { problem "videotestsrc failed"; continue; }
    "${runner[@]}" --timeout 300 -- filesrc location="$work/source.yuv" ! rawvideoparse width=1280 height=720 format=i420 framerate=30/1 \
        ! vtenc hardware=require bitrate=2000 "${encode_options[@]}" ! video/x-h264,stream-format=byte-stream ! filesink location="$work/vtenc.h264" \
        >"$work/encode.log" 2>&1 || problem "$pattern: vtenc hardware=require failed: $(grep -m1 ERROR "$work/encode.log")"
    ffmpeg -nostdin -v error "${ffmpeg_device[@]}" -filter_hw_device va -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 30 \
        -i "$work/source.yuv" -vf format=nv12,hwupload -c:v h264_vaapi "${ffmpeg_encode_options[@]}" -b:v 2000k -maxrate 2000k "$work/ffmpeg.h264" -y \
        >"$work/ffmpeg-encode.log" 2>&1 || problem "$pattern: FFmpeg's h264_vaapi failed: $(tail -1 "$work/ffmpeg-encode.log")"
    for encoder in vtenc ffmpeg; do
        file="$work/$encoder.h264"
        [ -s "$file" ] || { printf '%-10s %-9s %10s\n' "$pattern" "$encoder" "no output"; continue; }
        psnr="$(ffmpeg -nostdin -v info -r 30 -i "$file" -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 30 -i "$work/source.yuv" \
            -lavfi "[0:v][1:v]psnr" -f null - 2>&1 | grep -o 'y:[0-9.inf]*' | tail -1 | cut -d: -f2)"
        bytes="$(stat -c %s "$file")"
        keys="$(ffprobe -v error -select_streams v -show_entries frame=key_frame -of csv=p=0 "$file" 2>/dev/null | grep -c '^1' || true)"
        printf '%-10s %-9s %10s %12s %6s\n' "$pattern" "$encoder" "${psnr:-?}" "$((bytes * 8 * 30 / 120 / 1000))" "$keys"
    done
done

echo
echo "== 4. read-back: vaDeriveImage against vaGetImage (SWIFTVT_VA_READBACK), 1080p"
big="$corpus/h264/$(awk -F'\t' '$4 == 1920 && $5 == 1080 { print $1; exit }' "$manifest" 2>/dev/null)"
if [ -f "$big" ]; then
    for method in derive getimage; do
        start="$(seconds)"
        if SWIFTVT_VA_READBACK="$method" "${runner[@]}" --timeout 300 -- filesrc location="$big" ! h264parse-to-avcc \
                ! vtdec hardware=require ! video/x-raw,format=I420 ! fakesink >"$work/readback.log" 2>&1; then
            took="$(elapsed "$start")"
            frames="$(awk -F'\t' -v f="$(basename "$big")" '$1 == f { print $7 }' "$manifest")"
            echo "$method: $frames frames in $took s ($(awk -v n="$frames" -v t="$took" 'BEGIN { printf "%.1f", n / t }') frames/s)"
        else
            echo "$method: failed ($(grep -m1 ERROR "$work/readback.log"))"
        fi
    done
else
    problem "no 1080p stream in the corpus for the read-back measurement"
fi

echo
echo "== 5. encode frames/s with 1 and 4 pictures in flight (720p, 120 frames, constant QP)"
gst-launch-1.0 -q videotestsrc num-buffers=120 pattern=ball ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1 \
    ! filesink location="$work/source.yuv"
printf '%-6s %10s %10s %8s\n' depth SwiftVT FFmpeg ratio
for depth in 1 4; do
    start="$(seconds)"
    SWIFTVT_VA_ASYNC_DEPTH="$depth" "${runner[@]}" --timeout 300 -- filesrc location="$work/source.yuv" \
        ! rawvideoparse width=1280 height=720 format=i420 framerate=30/1 ! vtenc hardware=require rate-control=quality \
        allow-frame-reordering=false "${encode_options[@]}" ! fakesink >"$work/depth.log" 2>&1 || problem "depth $depth: vtenc failed"
    ours="$(elapsed "$start")"
    start="$(seconds)"
    ffmpeg -nostdin -v error "${ffmpeg_device[@]}" -filter_hw_device va -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 30 \
        -i "$work/source.yuv" -vf format=nv12,hwupload -c:v h264_vaapi "${ffmpeg_encode_options[@]}" -async_depth "$depth" -rc_mode CQP -qp 24 -bf 0 -f null - \
        >/dev/null 2>&1 || problem "depth $depth: FFmpeg failed"
    theirs="$(elapsed "$start")"
    printf '%-6s %10s %10s %8s\n' "$depth" "$(awk -v t="$ours" 'BEGIN { printf "%.1f", 120 / t }')" \
        "$(awk -v t="$theirs" 'BEGIN { printf "%.1f", 120 / t }')" "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.3fx", b / a }')"
done
echo "(frames/s of whole processes, start-up included; ratio = SwiftVT's frames/s over FFmpeg's)"

echo
echo "== 6. LIBVA_TRACE: SwiftVT's decode parameters against FFmpeg's"
for file in BA_MW_D.264 Cisco_Men_whisper_640x320_CABAC_Bframe_9.264 test_scalinglist_jm.264; do
    stream="$corpus/h264/$file"
    [ -f "$stream" ] || { echo "$file: not in the corpus"; continue; }
    rm -rf "$work/trace" && mkdir -p "$work/trace"
    LIBVA_TRACE="$work/trace/swiftvt" "${runner[@]}" --timeout 300 -- filesrc location="$stream" ! h264parse-to-avcc \
        ! vtdec hardware=require ! fakesink >/dev/null 2>&1
    # One thread: libva writes a trace file per thread, and FFmpeg's frame threads interleave.
    LIBVA_TRACE="$work/trace/ffmpeg" ffmpeg -nostdin -v error -threads 1 "${ffmpeg_device[@]}" -hwaccel vaapi -hwaccel_device va \
        -i "$stream" -f null - >/dev/null 2>&1
    if comparison="$(/usr/bin/python3 "$root/scripts/va-trace-compare.py" "$work/trace/swiftvt" "$work/trace/ffmpeg")"; then
        echo "$file: $comparison"
    else
        echo "$file: $comparison"
        problem "$file: SwiftVT's VA parameters differ from FFmpeg's"
    fi
done

echo
if [ "$problems" -gt 0 ]; then
    echo "hw-check: $problems problem(s)"
    exit 1
fi
echo "hw-check: no problems"
