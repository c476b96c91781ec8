#!/usr/bin/env bash
# Installs the Debian 12 packages SwiftVT needs to build, test and run its demos.
# Idempotent and quick when everything is present. Uses sudo when not root.
set -euo pipefail

packages=(
    pkg-config meson ninja-build
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
    gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-base-apps gstreamer1.0-plugins-good
    gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
    libavcodec-dev libavutil-dev libx264-dev libx265-dev libva-dev libffmpeg-nvenc-dev
    ffmpeg x265 xvfb x11-utils python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 vainfo gstreamer1.0-x
    python3-distributed python3-pytest
    shellcheck flake8
)

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    sudo_prefix=()
    if [ "$(id -u)" != 0 ]; then sudo_prefix=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_prefix[@]}" apt-get update -qq
    "${sudo_prefix[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "install-deps: the Swift 6 toolchain is not on PATH (expected at /opt/swift/usr/bin);" \
         "install Swift 6.1 or newer from swift.org and run again" >&2
    exit 1
fi
