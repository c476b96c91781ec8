#!/usr/bin/env bash
# Runs every SwiftVT test on a Debian 12 machine: installs what is missing, then builds and runs
# `meson test` (Swift unit, corpus and pipeline tests; the gst-inspect snapshot; loading the
# release plugin without the toolchain; the example pipelines in smoke mode; 60 s of fuzzing).
#
#   scripts/test.sh
#
# Environment: SWIFTVT_CORPUS (default ../shared/corpus); SWIFTVT_REQUIRE_TEST_INPUTS=1 (what
# .ci/run sets) turns a missing corpus, FFmpeg, Xvfb... into failures instead of skipped tests
# (tests/lib/require.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build.sh
# A log left by an earlier run must never be counted as this run's.
rm -f build/meson-logs/testlog.json build/meson-logs/testlog.txt
status=0
meson test -C build --print-errorlogs || status=$?

# Closing lines: the Swift Testing summaries from the Swift tests' logs, then Meson's count, the last
# line, in the form the CI harness reads: "meson: N passed, N failed, N skipped". A skipped test
# is neither: it is counted, and named, so that a run that skipped its way to green shows.
log=build/meson-logs/testlog.txt
# One line per Swift test run (swift-test, va-swift-tests), with the meson test it belongs to.
awk '/^test: / {name = $2} /^(✔|✘) Test run with [0-9]+ tests/ {print name ": " $0}' "$log" 2>/dev/null || true
python3 - build/meson-logs/testlog.json <<'PY' || status=1
import json, sys
try:
    records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
except OSError as error:
    # meson test did not get as far as running tests (a build failure): nothing passed.
    print(f"meson: no test log ({error.strerror}: {sys.argv[1]})")
    print("meson: 0 passed, 1 failed, 0 skipped")
    sys.exit(1)
passed = [r["name"] for r in records if r["result"] in ("OK", "EXPECTEDFAIL")]
skipped = [r["name"] for r in records if r["result"] == "SKIP"]
# FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS, and anything else meson may report.
failed = [r["name"] for r in records if r["result"] not in ("OK", "EXPECTEDFAIL", "SKIP")]
if skipped:
    print("meson: skipped: " + ", ".join(skipped))
if failed:
    print("meson: failed: " + ", ".join(failed))
print(f"meson: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
PY
exit "$status"
