#!/usr/bin/env bash
# Runs the in-process element and session tests under ThreadSanitizer or AddressSanitizer.
#
#   scripts/sanitize.sh thread      # TSan: data races
#   scripts/sanitize.sh address     # ASan (+ LeakSanitizer): memory errors and leaks
#
# Suites: SwiftVTElementsTests (the elements in real GStreamer pipelines, in the test process),
# SwiftVTSessionTests, SwiftVTCompressionTests and SwiftVTMultiPassTests; a debug build with
# `swift build --build-tests --sanitize=MODE` in its own scratch path (.build-tsan, .build-asan),
# then `swift test --skip-build --no-parallel` (suites one after another, as meson's swift-test:
# the heap-flatness tests measure the whole process). Only SwiftVT's code is instrumented:
# GStreamer, GLib, libavcodec, x264 and the Swift runtime are not.
#
# Reports are written by the sanitizer runtime into files (log_path) under
# SCRATCH/sanitizer-logs/, one per process (the multi-pass tests start child processes), and
# counted from there; their SUMMARY lines and the paths are printed. Last line:
#   sanitize MODE: clean (N tests)
#   sanitize MODE: K reports (N tests)            or with ", F tests failed"
# Exit status 0 only when there is no report and no test failed.
#
# thread: TSAN_OPTIONS halt_on_error=0 (every report; TSan's default), second_deadlock_stack=1,
#   suppressions=scripts/tsan.supp (see the policy there: never a report with a SwiftVT frame).
#   scripts/tsan-sync-shim.c is built with the toolchain's clang and preloaded: it gives TSan the
#   happens-before edges of two primitives it cannot see, Swift's Synchronization.Mutex under
#   contention (a PI futex) and GObject's reference count (GLib's own atomics); without it every
#   contended Mutex section and every element finalized on another thread is a false report.
# address: ASAN_OPTIONS detect_leaks=1 (LeakSanitizer at exit; scripts/lsan.supp, and GLib's
#   dropped quark table recognised below), detect_stack_use_after_return=1, strict_string_checks=1.
#   Swift cannot build with -fsanitize-recover=address, so ASan stops the process at its first
#   error whatever halt_on_error says; the tests after it do not run (the verdict says so).
# Both: G_SLICE=always-malloc, G_DEBUG=gc-friendly (below).
#
# Environment: SWIFTVT_FIXTURES (generated streams; default: made once into SCRATCH/fixtures with
# scripts/make-test-fixtures.sh), SWIFTVT_CORPUS (default ../shared/corpus),
# SWIFTVT_SANITIZE_FILTER (swift test --filter regex; default the four suites).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

mode="${1:-}"
case "$mode" in
    thread) scratch="$root/.build-tsan"; short=tsan ;;
    address) scratch="$root/.build-asan"; short=asan ;;
    *) echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
filter="${SWIFTVT_SANITIZE_FILTER:-^(SwiftVTElementsTests|SwiftVTSessionTests|SwiftVTCompressionTests|SwiftVTMultiPassTests)\.}"

echo "== sanitize $mode: building the tests (swift build --build-tests --sanitize=$mode, $scratch)"
# The build's own output is long; its last lines say enough on success, everything on failure.
build_log="$(mktemp)"
trap 'rm -f "$build_log"' EXIT
if ! swift build --build-tests --sanitize="$mode" --scratch-path "$scratch" >"$build_log" 2>&1; then
    grep -v "prohibited flag" "$build_log" | tail -40 >&2
    echo "sanitize $mode: the sanitized build failed" >&2
    exit 1
fi
grep -v "prohibited flag" "$build_log" | tail -1

if [ -z "${SWIFTVT_FIXTURES:-}" ]; then
    # Tiny streams made with FFmpeg and x264; own copy, so a rebuild of build/ cannot touch it.
    if [ ! -f "$scratch/fixtures/MANIFEST.tsv" ]; then
        echo "== generating the test fixtures into $scratch/fixtures"
        bash scripts/make-test-fixtures.sh "$scratch/fixtures" >/dev/null
    fi
    export SWIFTVT_FIXTURES="$scratch/fixtures"
fi

logs="$scratch/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
test_log="$logs/swift-test.log"

# GLib 2.74's slice allocator recycles memory (GstBuffer, GstMiniObject...) behind the sanitizers'
# backs: plain malloc lets ASan see a use after free and TSan see each block as new. gc-friendly
# clears freed pointers, so LeakSanitizer does not take a stale pointer for a live reference.
export G_SLICE=always-malloc G_DEBUG="gc-friendly${G_DEBUG:+,$G_DEBUG}"

preload=""
if [ "$mode" = thread ]; then
    clang="$(dirname "$(readlink -f "$(command -v swift)")")/clang"
    if [ ! -x "$clang" ]; then
        echo "sanitize thread: the toolchain's clang ($clang) is missing; it builds scripts/tsan-sync-shim.c" >&2
        exit 1
    fi
    # Not instrumented itself (no -fsanitize): it only forwards and annotates. GLib's headers for
    # GObject's layout; GLib itself is found at run time (dlsym), not linked.
    # shellcheck disable=SC2046 # pkg-config output is a list of flags
    "$clang" -O1 -fPIC -shared -Wall -Werror $(pkg-config --cflags gobject-2.0) scripts/tsan-sync-shim.c \
        -o "$scratch/tsan-sync-shim.so" -ldl
    preload="$scratch/tsan-sync-shim.so"
    # exitcode=0: the reports are counted from the log files, so that the test runner's exit
    # status means test failures only.
    export TSAN_OPTIONS="halt_on_error=0 exitcode=0 second_deadlock_stack=1 log_path=$logs/tsan suppressions=$root/scripts/tsan.supp ${TSAN_OPTIONS:-}"
else
    # exitcode=0 as for TSan: reports are counted from the logs (leaks are filtered there, see
    # known_leak). A memory error still stops the process, and the missing Swift Testing summary
    # then fails the run.
    export ASAN_OPTIONS="detect_leaks=1 detect_stack_use_after_return=1 strict_string_checks=1 exitcode=0 log_path=$logs/asan ${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp print_suppressions=0 ${LSAN_OPTIONS:-}"
fi

echo "== sanitize $mode: running $filter (logs: $logs)"
status=0
# LD_PRELOAD only on the test run (not on swift build): the shim matters in the test process.
# --disable-xctest: every SwiftVT test is a Swift Testing test; the XCTest runner would only start
# a second process that finds nothing (and leaks its own suite objects under LeakSanitizer).
LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}" \
    swift test --skip-build --sanitize="$mode" --scratch-path "$scratch" --disable-xctest --no-parallel --filter "$filter" \
    >"$test_log" 2>&1 || status=$?

# Swift Testing's summary: "✔ Test run with N tests passed ..." or "✘ Test run with N tests
# failed ...", and one "✘ Test ... failed" per failed test.
summary="$(grep -E "^[✔✘] Test run with [0-9]+ tests" "$test_log" | tail -1 || true)"
tests="$(sed -nE 's/^.*Test run with ([0-9]+) tests.*$/\1/p' <<<"$summary")"
failed_tests="$(grep -E '^✘ Test .* failed after' "$test_log" | grep -cv '^✘ Test run with' || true)"
grep -E "^✘ Test " "$test_log" | grep -v "Test run with" | sed 's/^/   /' || true
echo "   ${summary:-no Swift Testing summary in $test_log}"

# Reports per log file; LeakSanitizer's are looked at leak by leak (see known_leak below).
analysis="$(python3 - "$logs/$short".* <<'PY'
import glob, re, sys

# GLib's constructor (glib_init -> g_quark_init) allocates the first quark table, 2048 pointers;
# when more quarks are registered (GStreamer registers thousands) quark_new() copies it into a
# bigger one and drops the old one on purpose, so lookups need no lock (glib/gquark.c: "This
# leaks the old quarks array"). It happens in the dynamic loader before main, GLib has no frame
# pointers, so the fast unwinder ASan uses on every malloc stops at g_malloc: the report is
# exactly one 16 KiB object with the stack malloc <- g_malloc and nothing else. An LSan
# suppression cannot say "nothing else" (leak:g_malloc would hide every GLib-allocated leak, a
# forgotten gst_buffer_unref in SwiftVT included), and fast_unwind_on_malloc=0 to see the loader
# frames makes the run about four times slower; hence this exact match here instead.
def known_leak(header, frames):
    return (header.startswith("Direct leak of 16384 byte(s) in 1 object(s)")
            and len(frames) == 2 and " in malloc " in frames[0]
            and " in g_malloc " in frames[1] and "libglib-2.0.so" in frames[1])

start = re.compile(r"^(==\d+==)?(WARNING: ThreadSanitizer:|ERROR: (AddressSanitizer|LeakSanitizer):)")
total = 0
for path in sys.argv[1:]:
    if not glob.glob(path):
        continue  # no log file: the pattern itself came back unexpanded
    lines = open(path, errors="replace").read().splitlines()
    reports, current = [], None
    for line in lines:
        if start.match(line):
            current = [line]
            reports.append(current)
        elif current is not None:
            current.append(line)
            if line.startswith("SUMMARY:"):
                current = None
    kept = []
    for report in reports:
        if "LeakSanitizer" in report[0]:
            leaks, header, frames = [], None, []
            for line in report[1:] + [""]:
                if re.match(r"^(Direct|Indirect) leak of ", line):
                    header, frames = line, []
                elif header and line.strip().startswith("#"):
                    frames.append(line)
                elif header:
                    leaks.append((header, frames))
                    header = None
            unknown = [leak for leak in leaks if not known_leak(*leak)]
            if len(unknown) < len(leaks):
                print(f"   ignored in {path}: GLib's dropped quark table (16 KiB, intentional)")
            if not unknown:
                continue
            for header, frames in unknown:
                print(f"   {header} {frames[-1].strip() if frames else ''}")
        kept.append(report)
    if kept:
        print(f"== {len(kept)} report(s) in {path}:")
        for report in kept:
            print("   " + next((l for l in report if l.startswith("SUMMARY:")), report[0]))
    # TSan says how many reports its suppressions hid; say it here too.
    for line in lines:
        if re.search(r"Matched \d+ suppressions", line):
            print("   " + line)
    total += len(kept)
print(total)
PY
)"
# Everything but the last line is for the reader; the last line is the count.
sed '$d' <<<"$analysis"
reports="$(tail -1 <<<"$analysis")"

verdict="sanitize $mode: "
if [ "$reports" = 0 ]; then verdict+="clean"; else verdict+="$reports reports"; fi
verdict+=" (${tests:-0} tests"
if [ "$failed_tests" != 0 ]; then verdict+=", $failed_tests tests failed"; fi
if [ -z "$tests" ] || { [ "$status" != 0 ] && [ "$failed_tests" = 0 ]; }; then
    # No summary, or a non-zero exit without a failed test: the process died (an ASan error stops
    # it) or the runner failed; the log says which.
    verdict+=", swift test exit status $status"
    tail -20 "$test_log" | sed 's/^/   | /'
fi
verdict+=")"
echo "$verdict"
if [ "$reports" != 0 ] || [ "$status" != 0 ] || [ -z "$tests" ]; then
    exit 1
fi
