# shellcheck shell=bash
# Sourced by the tests, the example pipelines' smoke mode and scripts/with-software-va.sh: one
# rule for a missing test input (the corpus, FFmpeg or one of its encoders, Xvfb, GStreamer's
# libav plugin...).
#
# A developer's machine may lack an input: the test is then skipped (exit 77, meson's "skipped")
# with a message saying what is missing and how to get it. CI must never turn green because an
# input went missing, so .ci/run sets SWIFTVT_REQUIRE_TEST_INPUTS=1 and the same condition fails
# the test (exit 1) with the same message. Tests/SwiftVTTestSupport/Corpus.swift reads the same
# variable for the Swift tests.

# True when missing inputs must fail (SWIFTVT_REQUIRE_TEST_INPUTS set to anything but "" or 0).
swiftvt_inputs_required() {
    [ -n "${SWIFTVT_REQUIRE_TEST_INPUTS:-}" ] && [ "${SWIFTVT_REQUIRE_TEST_INPUTS}" != 0 ]
}

# require_input "WHAT IS MISSING AND HOW TO GET IT": ends the script: skipped (77), or failed (1)
# under SWIFTVT_REQUIRE_TEST_INPUTS.
require_input() {
    if swiftvt_inputs_required; then
        echo "FAIL: $1; SWIFTVT_REQUIRE_TEST_INPUTS is set, so a missing test input is a failure" >&2
        exit 1
    fi
    echo "skipped: $1 (with SWIFTVT_REQUIRE_TEST_INPUTS=1, as in CI, this fails)" >&2
    exit 77
}

# require_file PATH "WHAT IS MISSING AND HOW TO GET IT"
require_file() {
    [ -f "$1" ] || require_input "$2"
}

# require_command NAME "WHAT IS MISSING AND HOW TO GET IT"
require_command() {
    command -v "$1" >/dev/null 2>&1 || require_input "$2"
}

# missing_input_part "WHAT IS MISSING AND HOW TO GET IT": for one part of a test that cannot run
# while the rest can. Prints the skip and returns 0 locally; prints the failure and returns 1
# under SWIFTVT_REQUIRE_TEST_INPUTS, for the caller to count: missing_input_part "..." || fail ...
missing_input_part() {
    if swiftvt_inputs_required; then
        echo "FAIL: $1; SWIFTVT_REQUIRE_TEST_INPUTS is set, so a missing test input is a failure" >&2
        return 1
    fi
    echo "skipped part: $1 (with SWIFTVT_REQUIRE_TEST_INPUTS=1, as in CI, this fails)" >&2
    return 0
}
