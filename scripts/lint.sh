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

echo "== shellcheck"
if ! command -v shellcheck >/dev/null 2>&1; then
    echo "lint: shellcheck not found (Debian package shellcheck; scripts/install-deps.sh installs it)"
    report shellcheck 1 "not run (shellcheck not found)"
else
    mapfile -t scripts < <(files sh)
    output="$(shellcheck -f gcc "${scripts[@]}" 2>&1)"
    status=$?
    if [ -n "$output" ]; then echo "$output"; fi
    report shellcheck "$status" "$(grep -c . <<<"$output") finding(s) in ${#scripts[@]} shell scripts"
fi

echo "== flake8"
if ! command -v flake8 >/dev/null 2>&1; then
    echo "lint: flake8 not found (Debian package flake8; scripts/install-deps.sh installs it)"
    report flake8 1 "not run (flake8 not found)"
else
    mapfile -t python_files < <(files py)
    output="$(flake8 "${python_files[@]}" 2>&1)"
    status=$?
    if [ -n "$output" ]; then echo "$output"; fi
    report flake8 "$status" "$(grep -c . <<<"$output") finding(s) in ${#python_files[@]} Python files"
fi

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
