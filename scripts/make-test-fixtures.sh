#!/usr/bin/env bash
# Generates the small H.264 streams that cover what the conformance corpus lacks (it is all 8-bit
# 4:2:0 with right/bottom cropping only): 10-bit 4:2:0 and 4:2:2, 8-bit 4:2:2 and 4:4:4, full
# range, and a left/top crop. Made with FFmpeg and libx264 at test time (media files are never
# committed); each stream's reference MD5 comes from FFmpeg's own decoder with exact cropping
# (`-flags unaligned`, all planes, native format), like the corpus's ref_md5.
#
#   scripts/make-test-fixtures.sh OUTPUT_DIR     # writes OUTPUT_DIR/*.264 and OUTPUT_DIR/MANIFEST.tsv
set -euo pipefail
out="${1:?usage: make-test-fixtures.sh OUTPUT_DIR}"
mkdir -p "$out"
manifest="$out/MANIFEST.tsv.partial"
printf 'file\tpix_fmt\twidth\theight\tframes\tmd5\n' >"$manifest"

make_stream() {
    local name="$1" pix_fmt="$2" profile="$3" size="$4" extra="${5:-}"
    # shellcheck disable=SC2086
    ffmpeg -nostdin -loglevel error -y -f lavfi -i "testsrc2=size=$size:rate=25" -frames:v 12 -pix_fmt "$pix_fmt" \
        -c:v libx264 -profile:v "$profile" -preset veryfast -bf 2 -x264-params keyint=8 $extra "$out/$name"
    local width height md5
    read -r width height < <(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$out/$name" | tr x ' ')
    md5="$(ffmpeg -nostdin -loglevel error -flags unaligned -threads 1 -i "$out/$name" -f rawvideo -pix_fmt "$pix_fmt" - | md5sum | cut -c1-32)"
    printf '%s\t%s\t%s\t%s\t12\t%s\n' "$name" "$pix_fmt" "$width" "$height" "$md5" >>"$manifest"
}

make_stream yuv420p10le.264 yuv420p10le high10 102x58
make_stream yuv422p.264 yuv422p high422 102x58
make_stream yuv422p10le.264 yuv422p10le high422 102x58
make_stream yuv444p.264 yuv444p high444 102x58
make_stream yuvj420p.264 yuvj420p high 102x58
make_stream crop420.264 yuv420p high 112x64 "-bsf:v h264_metadata=crop_left=6:crop_top=4:crop_right=2:crop_bottom=2"
mv "$manifest" "$out/MANIFEST.tsv"
