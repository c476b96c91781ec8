#!/usr/bin/env bash
# Calls back into SwiftVT's elements from a downstream caps query and a bus sync handler
# (tests/reentrant_calls.py): no element may hold one of its locks while it calls out, so each
# pipeline must reach EOS with every frame. A deadlock (a lock held across the call out) is caught
# by the timeout and reported as one.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
source "$root/tests/lib/require.sh"
source "$root/pipelines/lib/plugin-env.sh"
trap 'rm -rf "$swiftvt_work_dir"' EXIT
status=0
timeout --kill-after=5 "${SWIFTVT_REENTRY_TIMEOUT:-180}" /usr/bin/python3 "$root/tests/reentrant_calls.py" "$swiftvt_work_dir" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "reentrant-calls: FAIL: a pipeline hung for 180 s: an element holds a lock while calling out (deadlock)" >&2
fi
exit "$status"
