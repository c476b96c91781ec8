# shellcheck shell=bash
# Sourced by scripts/hw-check.sh, which runs VA clients on a real device or SwiftVT's software VA driver
# (the pytest suites have the same in tests/lib/va_testing.py):
# which corpus streams are damaged on purpose, and how to read the driver's report
# ($SWIFTVT_VA_REPORT, see tests/va-driver/README.md).

# The corpus streams that are damaged (or not decodable base-layer H.264) on purpose.
# shellcheck disable=SC2034 # read by scripts/hw-check.sh, which sources this file
va_damaged_streams=" BA_MW_D_IDR_LOST.264 Error_I_P.264 sps_subsetsps_bothVUI.264 "

# count PATTERN FILE: lines of FILE matching PATTERN (0 when the file is missing).
count() {
    local n
    n="$(grep -c -- "$1" "$2" 2>/dev/null || true)"
    echo "${n:-0}"
}

# leaks REPORT: the live-objects lines (one per vaTerminate) that are not all zero.
leaks() {
    grep "^live-objects" "$1" 2>/dev/null | grep -v "configs=0 contexts=0 surfaces=0 buffers=0 images=0" || true
}
