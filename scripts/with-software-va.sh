#!/usr/bin/env bash
# Runs a command against SwiftVT's software VA driver (tests/va-driver/) on a private X server:
# builds the driver if needed, starts Xvfb on a free display, exports DISPLAY, LIBVA_DRIVER_NAME
# and LIBVA_DRIVERS_PATH, runs the command, stops Xvfb (also when the command fails or the script
# is interrupted) and returns the command's exit status.
#
#   scripts/with-software-va.sh COMMAND [ARGS...]
#   scripts/with-software-va.sh ffmpeg -init_hw_device vaapi=va:\$DISPLAY,connection_type=x11 ...
#
# Environment: SWIFTVT_VA_DRIVER_DIR (where the driver is built; default .build-va-driver/ in the
# repository); the driver's own variables (SWIFTVT_VA_LOG, SWIFTVT_VA_REPORT, SWIFTVT_VA_FAIL...)
# pass through, see tests/va-driver/README.md. Needs Xvfb (Debian package xvfb): without it, exits
# 77 (a skipped test for meson), or 1 under SWIFTVT_REQUIRE_TEST_INPUTS (CI), see tests/lib/require.sh.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/tests/lib/require.sh"
driver_dir="${SWIFTVT_VA_DRIVER_DIR:-$root/.build-va-driver}"
bash "$root/scripts/build-software-va-driver.sh" "$driver_dir"

require_command Xvfb "with-software-va: Xvfb not found (Debian package xvfb; scripts/install-deps.sh installs it)"

xvfb_pid=""
command_pid=""
xvfb_log="$(mktemp "${TMPDIR:-/tmp}/with-software-va.XXXXXX")"
# shellcheck disable=SC2317 # run by the traps below, which shellcheck does not see as calls
stop_xvfb() {
    if [ -n "$xvfb_pid" ]; then
        kill "$xvfb_pid" 2>/dev/null || true
        wait "$xvfb_pid" 2>/dev/null || true
        xvfb_pid=""
    fi
    rm -f "$xvfb_log"
}
# On a signal the command is stopped first (it is waited for in the background, so the trap runs
# at once instead of after the command), then Xvfb.
# shellcheck disable=SC2317 # run by the traps below
on_signal() {
    if [ -n "$command_pid" ]; then
        kill -TERM "$command_pid" 2>/dev/null || true
        wait "$command_pid" 2>/dev/null || true
    fi
    stop_xvfb
    exit "$1"
}
trap stop_xvfb EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

# A display is free when neither its socket nor its lock file exists. Two scripts may pick the same
# one at once; Xvfb then fails on the lock and the next number is tried.
started=0
for display in $(seq 90 189); do
    if [ -e "/tmp/.X11-unix/X$display" ] || [ -e "/tmp/.X$display-lock" ]; then
        continue
    fi
    Xvfb ":$display" -screen 0 640x480x24 -nolisten tcp -noreset >"$xvfb_log" 2>&1 &
    xvfb_pid=$!
    # Ready when it accepts connections (xdpyinfo, Debian x11-utils), else when the socket appears.
    for _ in $(seq 1 100); do
        if ! kill -0 "$xvfb_pid" 2>/dev/null; then
            break
        fi
        if command -v xdpyinfo >/dev/null 2>&1; then
            if DISPLAY=":$display" xdpyinfo >/dev/null 2>&1; then started=1; break; fi
        elif [ -S "/tmp/.X11-unix/X$display" ]; then
            sleep 0.2; started=1; break
        fi
        sleep 0.1
    done
    # A server that lost the race for the lock exits at once, perhaps after another one answered.
    if [ "$started" = 1 ] && sleep 0.2 && kill -0 "$xvfb_pid" 2>/dev/null; then
        break
    fi
    started=0
    kill "$xvfb_pid" 2>/dev/null || true
    wait "$xvfb_pid" 2>/dev/null || true
    xvfb_pid=""
done
if [ "$started" != 1 ]; then
    echo "with-software-va: could not start Xvfb on any display from :90 to :189" >&2
    cat "$xvfb_log" >&2 || true
    exit 1
fi

export DISPLAY=":$display"
export LIBVA_DRIVER_NAME=swiftvt_sw
export LIBVA_DRIVERS_PATH="$driver_dir"
status=0
# Started in the background with the script's own standard input (a background command would get
# /dev/null otherwise).
exec 3<&0
"$@" <&3 3<&- &
command_pid=$!
wait "$command_pid" || status=$?
command_pid=""
exit "$status"
