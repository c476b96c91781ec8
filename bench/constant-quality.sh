#!/usr/bin/env bash
# Constant quality across resolutions (issue 36 item 2): vtenc rate-control=quality quality=Q and
# vtenc_h265 the same, against x264enc pass=qual (at the whole CRFs either side, interpolated) and
# x265enc (the CRF through its option-string), at the CRF SwiftVT maps Q to, 51 * (1 - Q) (x264's and x265's CRF scale; VA-API's
# ICQ_quality_factor is the same number), on the corpus's 720p clip scaled to 640x360, 1280x720
# and 1920x1080 (the first 120 frames, decoded once to raw I420 in the temporary directory).
#
#   bench/constant-quality.sh
#
# Q is 0.6 (SWIFTVT_BENCH_QUALITY sets another): CRF 20.4. A CRF is a perceptual target, so the
# PSNR-Y it gives stays near one value across sizes while the bit rate follows the picture's area;
# printed per resolution and codec: PSNR-Y (FFmpeg's psnr filter against the raw input, mean over
# the frames) and kbit/s of SwiftVT's element and of the peer at the same CRF, the PSNR-Y
# difference (goal >= -0.05 dB: the same encoder library at the same CRF) and the bit-rate ratio
# SwiftVT/peer. With SWIFTVT_BENCH_SUMMARY=FILE (bench/all.sh) the differences go to FILE. A
# measurement: exits 0 when a goal is missed, non-zero only when something fails.
# Measured here (2 shared cores, 2026-11-28, 120 frames): vtenc 40.60 / 45.66 / 45.55 dB at 829 /
# 1890 / 3975 kbit/s, x264enc interpolated to CRF 20.4 within 0.003 dB and 0.3 % of it; vtenc_h265
# and x265enc the same pictures, 41.20 / 44.11 / 45.94 dB at 924 / 1994 / 3338 kbit/s (x265enc's
# files 0.1-0.4 % larger: its version SEI).
# SWIFTVT_BENCH_QUICK=1: 30 frames (checks the script, not for figures).
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name="constant-quality"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
clip="$corpus/VID_1280x720_cabac_temporal_direct.264"
bench_require_corpus -f "$clip"
quality="${SWIFTVT_BENCH_QUALITY:-0.6}"
crf=$(awk -v q="$quality" 'BEGIN { printf "%.1f", 51 * (1 - q) }')
fps=25 frames=120
if [ "$bench_quick" = 1 ]; then frames=30; fi

bench_install_deps
bench_build_plugin
bench_make_workdir
bench_use_private_plugin vtenc vtenc_h265
for element in x264enc x265enc avdec_h264 rawvideoparse videoscale; do
    if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
        echo "$bench_name: element $element not found" >&2
        exit 1
    fi
done

echo "== decoding $(basename "$clip") to raw I420 at three sizes ($frames frames), quality $quality = CRF $crf"
for size in 640x360 1280x720 1920x1080; do
    gst-launch-1.0 -q filesrc location="$clip" ! h264parse ! avdec_h264 ! videoscale ! \
        "video/x-raw,format=I420,width=${size%x*},height=${size#*x}" ! filesink location="$work/$size.i420"
    bytes=$(( ${size%x*} * ${size#*x} * 3 / 2 ))
    truncate -s $(( bytes * frames )) "$work/$size.i420"
done

encoder_of() { # encoder_of vtenc|x264enc|vtenc_h265|x265enc [WHOLE_CRF]
    case "$1" in
        vtenc|vtenc_h265) echo "$1 rate-control=quality quality=$quality" ;;
        # x264enc's CRF is its whole quantizer property (an option-string crf is overridden by
        # it, measured: the stream's own x264 SEI says crf=21.0 for option-string=crf=20.4); its
        # default VBV (vbv-buf-capacity 600 ms at bitrate, 2048 kbit/s) would cap the CRF.
        x264enc) echo "x264enc pass=qual speed-preset=medium vbv-buf-capacity=0 quantizer=$2" ;;
        x265enc) echo "x265enc speed-preset=medium tune=0 option-string=crf=$crf" ;;
    esac
}

measure() { # measure SIZE ENCODER CODEC [WHOLE_CRF] -> "kbit/s PSNR-Y"
    local size="$1" file="$work/$2-$1-${4:-q}.$3" log encoder
    read -r -a encoder <<<"$(encoder_of "$2" "${4:-}")"
    if ! gst-launch-1.0 -q filesrc location="$work/$size.i420" ! \
        rawvideoparse width="${size%x*}" height="${size#*x}" format=i420 framerate=$fps/1 ! \
        "${encoder[@]}" ! "video/x-$3,stream-format=byte-stream" ! filesink location="$file" 2>"$work/encode.err"
    then
        echo "$bench_name: $2 at $size failed:" >&2
        cat "$work/encode.err" >&2
        exit 1
    fi
    log=$(ffmpeg -v info -nostdin -i "$file" -f rawvideo -pix_fmt yuv420p -s "$size" -r "$fps" -i "$work/$size.i420" \
        -lavfi psnr -f null - 2>&1)
    awk -v bytes="$(stat -c %s "$file")" -v seconds="$(awk -v f="$frames" -v r="$fps" 'BEGIN { print f / r }')" \
        -v psnr="$(grep -o 'PSNR y:[0-9.inf]*' <<<"$log" | tail -1 | cut -d: -f2)" \
        'BEGIN { printf "%.0f %s\n", bytes * 8 / seconds / 1000, psnr }'
}

for pair in vtenc/x264enc/h264 vtenc_h265/x265enc/h265; do
    IFS=/ read -r ours peer codec <<<"$pair"
    for size in 640x360 1280x720 1920x1080; do
        ours_result=$(measure "$size" "$ours" "$codec")
        read -r ours_kbps ours_psnr <<<"$ours_result"
        if [ "$peer" = x264enc ]; then
            # x264enc at the whole CRFs around ours, its bit rate and PSNR-Y read off the line
            # between them at our fractional CRF.
            low=${crf%.*}
            low_result=$(measure "$size" x264enc "$codec" "$low")
            high_result=$(measure "$size" x264enc "$codec" $(( low + 1 )))
            read -r peer_kbps peer_psnr <<<"$(awk -v f="$crf" -v l="$low" -v a="$low_result" -v b="$high_result" \
                'BEGIN { split(a, x, " "); split(b, y, " "); t = f - l;
                         printf "%.0f %.6f\n", x[1] + (y[1] - x[1]) * t, x[2] + (y[2] - x[2]) * t }')"
        else
            peer_result=$(measure "$size" "$peer" "$codec")
            read -r peer_kbps peer_psnr <<<"$peer_result"
        fi
        diff=$(awk -v a="$ours_psnr" -v b="$peer_psnr" 'BEGIN { printf "%+.3f", a - b }')
        ratio=$(awk -v a="$ours_kbps" -v b="$peer_kbps" 'BEGIN { printf "%.3f", a / b }')
        printf '%-10s %-9s %s PSNR-Y %s dB, %s kbit/s | %s PSNR-Y %s dB, %s kbit/s | PSNR-Y %s dB (goal >= -0.05), bit rate ratio %s\n' \
            "$ours" "$size" "$ours" "$ours_psnr" "$ours_kbps" "$peer" "$peer_psnr" "$peer_kbps" "$diff" "$ratio"
        bench_summary "constant-quality-$ours-$size" \
            "quality $quality (CRF $crf) at $size, PSNR-Y $ours - $peer (dB); $ours $ours_psnr dB" "$diff" ">= -0.05"
    done
done
