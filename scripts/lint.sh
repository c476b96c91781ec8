#!/usr/bin/env bash
# Formatting and lint of the whole repository, as the meson test `lint` runs it (scripts/test.sh,
# .ci/run) and as a developer runs it before committing:
#
#   scripts/lint.sh
#
#  - shellcheck (Debian package shellcheck) on every shell script, with .shellcheckrc;
#  - flake8 (Debian package flake8) on every Python file, with .flake8;
#  - the Swift toolchain's `swift format lint --strict` on Sources/, Tests/ and Package.swift, with
#    .swift-format. It only reports; to reformat in place:
#      swift format format -i -r --configuration .swift-format Sources Tests Package.swift
#
# The files are the ones git tracks (git ls-files); outside a git checkout (an unpacked source
# archive), the ones find sees, without build output and caches. Prints each linter's findings and a
# count per linter, and exits 1 when a linter found something or could not run
# (scripts/install-deps.sh installs shellcheck and flake8; swift comes with the toolchain).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# files EXTENSION: the repository's *.EXTENSION files, one per line (no file name here has a newline).
files() {
    if command -v git >/dev/null 2>&1 && [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$PWD" ]; then
        git ls-files -- "*.$1" | while IFS= read -r file; do
            if [ -f "$file" ]; then echo "$file"; fi # tracked but deleted in the work tree: not linted
        done
    else
        find . \( -name .git -o -name '.build*' -o -path './build*' -o -name .swiftpm -o -name __pycache__ \
            -o -path ./fuzz/work -o -path ./fuzz/artifacts \) -prune -o -type f -name "*.$1" -print | sed 's|^\./||'
    fi
}

failed=()
summary=()
# report NAME STATUS FINDINGS: one summary line; NAME failed when STATUS is not 0.
report() {
    summary+=("lint: $1: $3")
    if [ "$2" != 0 ]; then failed+=("$1"); fi
}

# lint_files NAME EXTENSION KIND COMMAND...: COMMAND (a Debian package of the same name) over the
# repository's *.EXTENSION files; prints its findings and reports their count.
lint_files() {
    local name="$1" extension="$2" kind="$3"
    shift 3
    echo "== $name"
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "lint: $name not found (Debian package $name; scripts/install-deps.sh installs it)"
        report "$name" 1 "not run ($name not found)"
        return
    fi
    local listed output status
    mapfile -t listed < <(files "$extension")
    output="$("$@" "${listed[@]}" 2>&1)"
    status=$?
    if [ -n "$output" ]; then echo "$output"; fi
    report "$name" "$status" "$(grep -c . <<<"$output") finding(s) in ${#listed[@]} $kind"
}

lint_files shellcheck sh "shell scripts" shellcheck -f gcc
lint_files flake8 py "Python files" flake8

echo "== swift format lint"
if ! swift format --version >/dev/null 2>&1; then
    echo "lint: 'swift format' not found: it comes with the Swift toolchain (6 or newer) on PATH"
    report swift-format 1 "not run ('swift format' not found)"
else
    output="$(swift format lint --strict -r --configuration .swift-format Sources Tests Package.swift 2>&1)"
    status=$?
    if [ -n "$output" ]; then echo "$output"; fi
    findings="$(grep -cE ': (error|warning): ' <<<"$output")"
    report swift-format "$status" "$findings finding(s) in Sources, Tests and Package.swift (to fix them: swift format format -i -r --configuration .swift-format Sources Tests Package.swift)"
fi

printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "lint: FAILED: ${failed[*]}"
    exit 1
fi
echo "lint: OK"
