#!/usr/bin/env bash
# The repository itself: no merge conflict markers left in a tracked file (a README once carried
# one through a merge and a review), and no build output, media file or Package.resolved tracked.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "hygiene: $root is not a git checkout; nothing to check" >&2
    exit 77
fi
status=0
# The three markers git writes, each at the start of a line; "=======" alone as a whole line.
if markers=$(git grep -n -I -E '^(<<<<<<< |>>>>>>> |=======$)' -- . 2>/dev/null); then
    echo "hygiene: FAILED: merge conflict markers in tracked files:" >&2
    echo "$markers" >&2
    status=1
fi
if tracked=$(git ls-files | grep -E '(^|/)(\.build[^/]*|build[^/]*)/|\.(mp4|mkv|264|h264|265|yuv)$|(^|/)Package\.resolved$'); then
    echo "hygiene: FAILED: build output, media or Package.resolved tracked:" >&2
    echo "$tracked" >&2
    status=1
fi
[ "$status" = 0 ] && echo "hygiene: no conflict markers, no build output or media tracked ($(git ls-files | wc -l) files)"
exit "$status"
