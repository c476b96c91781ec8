#!/usr/bin/env bash
# Runs every SwiftVT test on a Debian 12 machine: installs what is missing, then builds and runs
# `meson test` (Swift unit, corpus and pipeline tests; the gst-inspect snapshot; loading the
# release plugin without the toolchain; the example pipelines in smoke mode; 60 s of fuzzing).
#
#   scripts/test.sh
#
# Environment: SWIFTVT_CORPUS (default ../shared/corpus).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
status=0
meson test -C build --print-errorlogs || status=$?

# Closing lines: the Swift Testing summary from the swift-test log, then Meson's count.
log=build/meson-logs/testlog.txt
grep -E "^✔ Test run with [0-9]+ tests|^✘ Test run with [0-9]+ tests" "$log" | tail -1 || true
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
results = [json.loads(line)["result"] for line in open(sys.argv[1]) if line.strip()]
passed = sum(1 for result in results if result in ("OK", "EXPECTEDFAIL"))
print(f"meson: {passed} passed, {len(results) - passed} failed")
PY
exit "$status"
