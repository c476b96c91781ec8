#!/usr/bin/env bash
# Runs every SwiftVT test on a Debian 12 machine: installs what is missing, builds, runs the
# Swift unit and corpus tests, and a short fuzzing run of the bitstream layer.
#
#   scripts/test.sh
#
# Environment: SWIFTVT_CORPUS (default ../shared/corpus), SWIFTVT_FUZZ_SECONDS (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

echo "== swift test (unit and corpus tests)"
swift build --build-tests 2>&1 | grep -v "prohibited flag" | tail -3
swift test --skip-build 2>&1 | grep -v "^\s*Executed 0 tests" | tee /tmp/swiftvt-swift-test.log | grep -vE "^(◇|↳|✔ Test [^r])" || true
if ! grep -q "^✔ Test run with [0-9]* tests.*passed" /tmp/swiftvt-swift-test.log; then
    echo "swift test FAILED" >&2
    exit 1
fi

echo "== fuzzing the bitstream layer (${SWIFTVT_FUZZ_SECONDS:-60} s)"
bash fuzz/run.sh "${SWIFTVT_FUZZ_SECONDS:-60}"

# The closing line the CI reads: the Swift Testing summary.
grep "^✔ Test run with" /tmp/swiftvt-swift-test.log
