#!/usr/bin/env bash
# tests/lib/run-pipeline.py, the pipeline runner the tests use where a pipeline is expected to
# fail (gst-launch-1.0 1.22 can hang when an ERROR comes before its main loop runs): each exit
# status and the gst-launch-style lines the tests grep, with core GStreamer elements only.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
run_pipeline="$root/tests/lib/run-pipeline.py"
work="$(mktemp -d /tmp/run-pipeline-selftest-XXXXXX)"
trap 'rm -rf "$work"' EXIT
# A private registry: the runner must not depend on (or rewrite) the user's.
export GST_REGISTRY="$work/registry.bin"
failures=0

# check NAME EXPECTED_STATUS PATTERN... -- RUNNER ARGUMENTS: runs the runner, then requires its
# exit status and a line matching each PATTERN (grep -E) in its combined output.
check() {
    local name="$1" want="$2"
    shift 2
    local patterns=()
    while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
    shift
    local log="$work/$name.log" status=0 problems=""
    "$run_pipeline" "$@" >"$log" 2>&1 || status=$?
    [ "$status" = "$want" ] || problems+=" exit $status, expected $want;"
    for pattern in "${patterns[@]}"; do
        grep -Eq -- "$pattern" "$log" || problems+=" no line matching '$pattern';"
    done
    if [ -z "$problems" ]; then
        echo "run-pipeline-selftest: ok: $name (exit $status)"
    else
        echo "run-pipeline-selftest: FAIL: $name:$problems" >&2
        sed 's/^/    /' "$log" >&2
        failures=$((failures + 1))
    fi
}

check parse-error 2 '^ERROR: pipeline could not be constructed: no element "no_such_element"' \
    -- "videotestsrc ! no_such_element"
# gst-launch-1.0 refuses this one at parse time too: two capsfilters that cannot link.
check caps-link-error 2 '^ERROR: pipeline could not be constructed' \
    -- "videotestsrc num-buffers=3 ! video/x-raw,format=I420 ! video/x-raw,format=NV12 ! fakesink"
check eos 0 '^Got EOS from element "pipeline0"\.$' '^run-pipeline: 0 error\(s\), 0 warning\(s\), ended by eos$' \
    -- videotestsrc num-buffers=3 ! fakesink
check eos-after-double-dash 0 '^Got EOS from element "pipeline0"\.$' \
    -- --timeout 30 -- videotestsrc num-buffers=3 ! fakesink
# A failure at negotiation, while streaming: rawvideoparse announces NV12-incompatible I420 caps
# only once data flows (the link check at parse time cannot see it).
not_negotiated=(videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=64,height=64
    ! rawvideoparse use-sink-caps=false format=i420 width=64 height=64 ! video/x-raw,format=NV12 ! fakesink)
check not-negotiated 1 '^ERROR: from element /GstPipeline:pipeline0/GstVideoTestSrc:videotestsrc0: Internal data stream error\.$' \
    '^Additional debug info:$' 'reason not-negotiated' '^run-pipeline: 1 error\(s\), 0 warning\(s\), ended by error$' \
    -- "${not_negotiated[@]}"
check expect-error-gets-error 0 '^ERROR: from element' -- --expect error "${not_negotiated[@]}"
check expect-error-gets-eos 1 '^run-pipeline: expected an ERROR, but the pipeline ended by eos$' \
    -- --expect error videotestsrc num-buffers=3 ! fakesink
check expect-eos-gets-error 1 '^run-pipeline: expected EOS, but the pipeline ended by error$' \
    -- --expect eos "${not_negotiated[@]}"
# An ERROR posted during the first state change (before gst-launch-1.0's main loop would run):
# reported, and every copy counted (filesrc and its base class each post one).
check state-change-failure 1 '^ERROR: from element /GstPipeline:pipeline0/GstFileSrc:filesrc0: Resource not found\.$' \
    '^run-pipeline: 2 error\(s\), 0 warning\(s\), ended by state-change-failure$' \
    -- filesrc location=/nonexistent-dir/input ! fakesink
check state-change-failure-expected 0 '^ERROR: from element' \
    -- --expect error filesrc location=/nonexistent-dir/input ! fakesink
# Arguments are joined as gst-launch-1.0 joins them: a value with a space stays one value.
mkdir -p "$work/a folder"
check spaces-in-argument 0 '^Got EOS' -- videotestsrc num-buffers=2 ! filesink location="$work/a folder/out.raw"
[ -s "$work/a folder/out.raw" ] || { echo "run-pipeline-selftest: FAIL: nothing written to a path with a space" >&2; failures=$((failures + 1)); }

# A pipeline that never ends: exit 124 at the timeout, not later.
start=$(date +%s%N)
check timeout 124 '^run-pipeline: timed out after 2 s \(state PLAYING' '^run-pipeline: 0 error\(s\), 0 warning\(s\), ended by timeout$' \
    -- --timeout 2 videotestsrc is-live=true ! fakesink
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$elapsed_ms" -gt 3500 ]; then
    echo "run-pipeline-selftest: FAIL: --timeout 2 took $elapsed_ms ms" >&2
    failures=$((failures + 1))
else
    echo "run-pipeline-selftest: ok: --timeout 2 ended after $elapsed_ms ms"
fi

# A teardown that cannot finish: identity sleeps 30 s in the streaming thread (g_usleep, which no
# flush interrupts), so setting NULL blocks; after the timeout the runner gives up on it at 10 s.
start=$(date +%s%N)
check teardown-hung 3 '^run-pipeline: timed out after 2 s' '^run-pipeline: teardown hung' \
    -- --timeout 2 videotestsrc ! identity sleep-time=30000000 ! fakesink
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$elapsed_ms" -gt 14000 ]; then
    echo "run-pipeline-selftest: FAIL: a hung teardown kept the runner for $elapsed_ms ms" >&2
    failures=$((failures + 1))
else
    echo "run-pipeline-selftest: ok: a hung teardown was abandoned after $elapsed_ms ms"
fi

# SIGTERM (what meson sends at its own timeout): the pipeline is stopped, exit 130.
"$run_pipeline" videotestsrc is-live=true ! fakesink >"$work/signal.log" 2>&1 &
pid=$!
# Streaming by then (the signal would also be handled before the first state change).
sleep 1
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
if [ "$status" = 130 ] && grep -q "ended by signal" "$work/signal.log"; then
    echo "run-pipeline-selftest: ok: SIGTERM (exit 130)"
else
    echo "run-pipeline-selftest: FAIL: SIGTERM gave exit $status" >&2
    sed 's/^/    /' "$work/signal.log" >&2
    failures=$((failures + 1))
fi

if [ "$failures" -gt 0 ]; then
    echo "run-pipeline-selftest: $failures failure(s)" >&2
    exit 1
fi
echo "run-pipeline-selftest: all checks passed"
