# shellcheck shell=bash
# Shared setup of the bench scripts; sourced, not run:
#
#   set -euo pipefail
#   cd "$(dirname "$0")/.."
#   bench_name=my-bench              # prefix of every message
#   source bench/lib/common.sh
#
# Sets `corpus` (SWIFTVT_CORPUS/h264, default ../shared/corpus/h264) and defines:
#   bench_require_corpus -f|-d PATH   exit 1 with a hint when the corpus file/folder is missing
#   bench_install_deps                scripts/install-deps.sh
#   bench_apt_install PACKAGE         quiet apt-get install (apt-get update and retry once), never fails
#   bench_setup_timer                 sets `timer`: hyperfine (installed if missing) or date, from
#                                     SWIFTVT_BENCH_TIMER (default hyperfine)
#   bench_build_plugin                release build of the plugin; sets `plugin_so` (with
#                                     SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so: that file, no build)
#   bench_make_workdir                sets `work` (mktemp -d, removed on exit)
#   bench_use_private_plugin ELEMENT...
#                                     GST_PLUGIN_PATH = a folder in $work holding only our .so,
#                                     GST_REGISTRY = $work/registry.bin; exit 1 unless every ELEMENT
#                                     is found
#   bench_time_commands CMD...        one line "median min max" (seconds) per command, in order
#   bench_median_seconds CMD...       one median (seconds) per command, in order
#   bench_load                        the machine's load now: "loadavg L" (1-minute, /proc/loadavg)
#   bench_summary ROW DESCRIPTION VALUE GOAL [LOAD]
#                                     one figure for bench/all.sh (below); no-op unless
#                                     SWIFTVT_BENCH_SUMMARY is set
#   bench_summary_file FILE           bench_summary for each line of FILE (written by a script's
#                                     report, often in Python):
#                                     ROW<TAB>DESCRIPTION<TAB>VALUE<TAB>GOAL<TAB>LOAD
#   bench_repeat_into SOURCE BYTES OUTPUT
#                                     SOURCE repeated (cat) into OUTPUT until it holds BYTES or
#                                     more; prints the repeat count
#   bench_check_converter FILE FORMAT ELEMENT...
#                                     one verbose run of filesrc FILE ! ELEMENT... ! fakesink: exit 1
#                                     on a pipeline error or output caps other than
#                                     stream-format=FORMAT, alignment=au; prints the number of
#                                     buffers that reached the sink (the parser benches)
# Sets `bench_quick` (1 with SWIFTVT_BENCH_QUICK=1: smaller inputs where a script supports it, for
# checking the scripts themselves, not for figures; else 0).
# The timing functions read `runs` (timed runs per command), `bench_warmup` (warm-up runs, default
# 1), `bench_prepare` (shell command run before every run, default none) and `bench_noun` (word
# for a command in failure messages, default "pipeline"). Commands are strings whose words are
# quoted with printf %q, for hyperfine --shell=none or eval.
# shellcheck disable=SC2154 # bench_name, runs, timer and work are set by the sourcing script

# shellcheck disable=SC2034 # used by the sourcing script
corpus="${SWIFTVT_CORPUS:-../shared/corpus}/h264"
bench_warmup="${bench_warmup:-1}"
bench_prepare="${bench_prepare:-}"
bench_noun="${bench_noun:-pipeline}"
if [ "${SWIFTVT_BENCH_QUICK:-0}" = 1 ]; then bench_quick=1; else bench_quick=0; fi

bench_require_corpus() { # bench_require_corpus -f|-d PATH
    if ! test "$1" "$2"; then
        echo "$bench_name: corpus not found: $2 does not exist" \
             "(set SWIFTVT_CORPUS to the folder that contains h264/)" >&2
        exit 1
    fi
}

bench_install_deps() {
    bash scripts/install-deps.sh
}

bench_apt_install() { # bench_apt_install PACKAGE
    local -a sudo_prefix=() apt_install
    if [ "$(id -u)" != 0 ]; then sudo_prefix=(sudo); fi
    apt_install=("${sudo_prefix[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
    "${apt_install[@]}" install -y -qq "$1" >/dev/null 2>&1 \
        || { "${apt_install[@]}" update -qq && "${apt_install[@]}" install -y -qq "$1" >/dev/null 2>&1; } \
        || true
}

# bench_require_gnu_time FORMAT: GNU time as $gnu_time, installed when missing (FORMAT is the
# %-field the bench needs, checked to work).
bench_require_gnu_time() {
    gnu_time=/usr/bin/time
    if ! "$gnu_time" -f "$1" true >/dev/null 2>&1; then
        echo "$bench_name: installing GNU time"
        bench_apt_install time
    fi
    if ! "$gnu_time" -f "$1" true >/dev/null 2>&1; then
        echo "$bench_name: GNU time ($gnu_time -f $1) unavailable; install the Debian package time" >&2
        exit 1
    fi
}

bench_setup_timer() {
    timer="${SWIFTVT_BENCH_TIMER:-hyperfine}"
    if [ "$timer" = hyperfine ] && ! command -v hyperfine >/dev/null 2>&1; then
        echo "$bench_name: installing hyperfine"
        bench_apt_install hyperfine
    fi
    if [ "$timer" = hyperfine ] && ! command -v hyperfine >/dev/null 2>&1; then
        echo "$bench_name: hyperfine unavailable, timing with date +%s%N" >&2
        timer="date"
    fi
}

bench_build_plugin() {
    if [ -n "${SWIFTVT_PLUGIN:-}" ]; then
        if [ ! -f "$SWIFTVT_PLUGIN" ]; then
            echo "$bench_name: SWIFTVT_PLUGIN=$SWIFTVT_PLUGIN does not exist" >&2
            exit 1
        fi
        plugin_so="$(readlink -f "$SWIFTVT_PLUGIN")"
        echo "== using the plugin $plugin_so (SWIFTVT_PLUGIN; not rebuilt)"
        return
    fi
    echo "== building the release plugin"
    swift build -c release --product gstswiftvt 2>&1 | grep -v "prohibited flag" | tail -1
    plugin_so="$PWD/.build/release/libgstswiftvt.so"
    if [ ! -f "$plugin_so" ]; then
        echo "$bench_name: $plugin_so missing after the build" >&2
        exit 1
    fi
}

bench_make_workdir() {
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
}

bench_use_private_plugin() { # bench_use_private_plugin ELEMENT...
    local element
    mkdir -p "$work/plugins"
    cp "$plugin_so" "$work/plugins/"
    unset GST_PLUGIN_PATH_1_0 GST_REGISTRY_1_0
    export GST_PLUGIN_PATH="$work/plugins"
    export GST_REGISTRY="$work/registry.bin"
    for element in "$@"; do
        if ! gst-inspect-1.0 "$element" >/dev/null 2>&1; then
            echo "$bench_name: element $element not found; the plugin says:" >&2
            gst-inspect-1.0 "$work/plugins/$(basename "$plugin_so")" >&2 || true
            exit 1
        fi
    done
}

bench_time_commands() { # bench_time_commands CMD... -> "median min max" per command
    if [ "$timer" = hyperfine ]; then
        local json="$work/hyperfine.json"
        local -a prepare=()
        if [ -n "$bench_prepare" ]; then prepare=(--prepare "$bench_prepare"); fi
        if ! hyperfine --shell=none --runs "$runs" --warmup "$bench_warmup" "${prepare[@]}" --style none \
                --export-json "$json" "$@" >"$work/hyperfine.log" 2>&1; then
            echo "$bench_name: a $bench_noun failed:" >&2
            cat "$work/hyperfine.log" >&2
            exit 1
        fi
        python3 -c 'import json, sys; [print(r["median"], r["min"], r["max"]) for r in json.load(open(sys.argv[1]))["results"]]' "$json"
    else
        local i round start end
        local -a cmds=("$@") times=()
        for (( i = 0; i < ${#cmds[@]}; i++ )); do times[i]=""; done
        for (( round = -bench_warmup; round < runs; round++ )); do # negative rounds are warm-up
            for (( i = 0; i < ${#cmds[@]}; i++ )); do
                if [ -n "$bench_prepare" ]; then eval "$bench_prepare"; fi
                start=$(date +%s%N)
                if ! eval "${cmds[i]}" >/dev/null 2>"$work/run.err"; then
                    echo "$bench_name: $bench_noun failed: ${cmds[i]}" >&2
                    cat "$work/run.err" >&2
                    exit 1
                fi
                end=$(date +%s%N)
                if [ "$round" -ge 0 ]; then times[i]+="$(( end - start )) "; fi
            done
        done
        for (( i = 0; i < ${#cmds[@]}; i++ )); do
            # shellcheck disable=SC2086 # a list of numbers
            python3 -c 'import statistics, sys; t = [int(a) / 1e9 for a in sys.argv[1:]]; print(statistics.median(t), min(t), max(t))' ${times[i]}
        done
    fi
}

bench_median_seconds() { # bench_median_seconds CMD... -> one median per command
    local median _
    bench_time_commands "$@" | while read -r median _; do echo "$median"; done
}

# The summary protocol of bench/all.sh. With SWIFTVT_BENCH_SUMMARY=FILE, every figure a bench
# compares with a goal (or reports for information) is appended to FILE as one line of six
# tab-separated fields:
#   ROW  DESCRIPTION  VALUE  GOAL  VERDICT  LOAD
# ROW is a stable identifier (e.g. decode-1080p-1t-vs-avdec); VALUE a number (or n/a); GOAL an
# operator and a bound ("<= 0.95", ">= 1.00") or "-" for none; VERDICT is computed here: MET or
# MISSED by comparing VALUE with GOAL (as floating-point numbers), INFO when there is no goal,
# UNDETERMINED when VALUE is not a number (e.g. a cost at or below the floor); LOAD is the
# machine's load while the figure was measured: by default `bench_load` at the call, or what the
# script captured at measurement time and passes as LOAD ("loadavg L" and, where the script
# computes it, "others C cores": the CPU other processes used).
bench_load() { # -> "loadavg L"
    echo "loadavg $(cut -d' ' -f1 /proc/loadavg)"
}

bench_summary() { # bench_summary ROW DESCRIPTION VALUE GOAL [LOAD]
    if [ -z "${SWIFTVT_BENCH_SUMMARY:-}" ]; then return 0; fi
    local row="$1" description="$2" value="$3" goal="${4:--}" load="${5:-}" verdict
    if [ -z "$load" ]; then load="$(bench_load)"; fi
    if ! verdict=$(awk -v value="$value" -v goal="$goal" 'BEGIN {
            if (goal == "-" || goal == "") { print "INFO"; exit 0 }
            if (split(goal, g, " ") != 2 || g[2] !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/) exit 1
            if (value !~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/) { print "UNDETERMINED"; exit 0 }
            v = value + 0; b = g[2] + 0
            if (g[1] == "<=") ok = v <= b
            else if (g[1] == ">=") ok = v >= b
            else if (g[1] == "<") ok = v < b
            else if (g[1] == ">") ok = v > b
            else exit 1
            print ok ? "MET" : "MISSED"
        }'); then
        echo "$bench_name: bench_summary: bad goal \"$goal\" for $row (expected \"<= N\", \">= N\" or \"-\")" >&2
        return 1
    fi
    # One line, six fields: no tab or newline inside a field.
    local field fields=()
    for field in "$row" "$description" "$value" "$goal" "$verdict" "$load"; do
        field="${field//$'\t'/ }"
        fields+=("${field//$'\n'/ }")
    done
    (IFS=$'\t'; echo "${fields[*]}") >>"$SWIFTVT_BENCH_SUMMARY"
}

bench_summary_file() { # bench_summary_file FILE: lines ROW<TAB>DESCRIPTION<TAB>VALUE<TAB>GOAL<TAB>LOAD
    local row description value goal load
    while IFS=$'\t' read -r row description value goal load; do
        bench_summary "$row" "$description" "$value" "$goal" "$load"
    done <"$1"
}

bench_repeat_into() { # bench_repeat_into SOURCE TARGET_BYTES OUTPUT -> prints the repeat count
    local size count
    size=$(stat -c %s "$1")
    count=$(( ($2 + size - 1) / size ))
    for _ in $(seq "$count"); do cat "$1"; done >"$3"
    echo "$count"
}

bench_check_converter() { # bench_check_converter FILE FORMAT ELEMENT... -> buffers at the sink
    local file="$1" format="$2" log="$work/check.log"
    shift 2
    if ! gst-launch-1.0 -v filesrc location="$file" ! "$@" ! fakesink sync=false silent=false >"$log" 2>&1; then
        echo "$bench_name: the pipeline through $1 failed on $file:" >&2
        grep -iE "error|warn" "$log" | head -20 >&2
        exit 1
    fi
    if ! grep "fakesink0.GstPad:sink: caps = " "$log" | grep "stream-format=(string)$format" | grep -q "alignment=(string)au"; then
        echo "$bench_name: the pipeline through $1 did not output stream-format=$format,alignment=au caps:" >&2
        grep "fakesink0.GstPad:sink: caps = " "$log" >&2 || echo "(no caps reached the sink)" >&2
        exit 1
    fi
    grep -c "fakesink0: last-message = chain" "$log" || true
}
