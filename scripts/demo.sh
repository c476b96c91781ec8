#!/usr/bin/env bash
# The main job on its embedded default: installs what is missing, builds the plugin (release,
# through Meson and SwiftPM) and runs pipelines/demo-main.sh, which writes swiftvt-demo.mp4.
#
#   scripts/demo.sh [OUTPUT.mp4]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export SWIFTVT_PLUGIN="$PWD/build/libgstswiftvt.so"
bash pipelines/demo-main.sh "${1:-swiftvt-demo.mp4}"
