# Sourced by the bash tests that expect a pipeline to fail (encoder-formats.sh; the pytest suites use parity_testing.assert_one_swiftvt_error): the
# caller defines `runner` (tests/lib/run-pipeline.py), `pass` and `fail`.
#
# expect_one_error LABEL PATTERN PIPELINE: the runner's report for PIPELINE ends by an ERROR,
# exactly one ERROR comes from SwiftVT's element and it says what PATTERN says. (An upstream source
# adds GStreamer's own "Internal data stream error" for the not-negotiated flow, as with any
# element that refuses caps: basesrc posts it for every fatal flow.)
expect_one_error() {
    local label="$1" pattern="$2" pipeline="$3" output status ours
    status=0
    output="$("${runner[@]}" --timeout 60 --expect error "$pipeline" 2>&1)" || status=$?
    ours="$(grep -c '^ERROR: from element .*SwiftVT' <<<"$output" || true)"
    if [ "$status" -eq 0 ] && [ "$ours" = 1 ] && grep -q -- "$pattern" <<<"$output"; then
        pass "$label: one ERROR ($(grep -m1 '^ERROR' <<<"$output" | cut -c1-200)...)"
    else
        fail "$label: expected exactly one ERROR from SwiftVT matching '$pattern' (runner exit $status, $ours from SwiftVT): $output"
    fi
}
