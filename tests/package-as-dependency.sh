#!/usr/bin/env bash
# MediaCore, H264 and SwiftVT are offered as SwiftPM libraries (README): another package must be
# able to depend on them by version. SwiftPM refuses a versioned dependency whose targets carry
# unsafe compiler flags ("the target 'H264' in product 'H264' contains unsafe build flags"), so
# this builds a small consumer package against a tagged clone of the working tree (its committed
# HEAD plus uncommitted changes) and runs it: it reads an access unit with H264SampleBuilder.
set -euo pipefail
root="${SWIFTVT_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The source as a git repository with a version tag (a versioned dependency needs one).
mkdir "$work/swiftvt"
git -C "$root" ls-files -z --cached --others --exclude-standard \
    | (cd "$root" && xargs -0 cp --parents -t "$work/swiftvt" 2>/dev/null || true)
git -C "$work/swiftvt" init -q
git -C "$work/swiftvt" add -A
git -C "$work/swiftvt" -c user.name=test -c user.email=test@localhost commit -q -m snapshot
git -C "$work/swiftvt" tag 1.0.0

mkdir -p "$work/consumer/Sources/Consumer"
cat >"$work/consumer/Package.swift" <<SWIFT
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(url: "file://$work/swiftvt", exact: "1.0.0")],
    targets: [
        .executableTarget(name: "Consumer", dependencies: [
            .product(name: "MediaCore", package: "swiftvt"), .product(name: "H264", package: "swiftvt"),
            .product(name: "SwiftVT", package: "swiftvt"),
        ])
    ])
SWIFT
cat >"$work/consumer/Sources/Consumer/main.swift" <<'SWIFT'
import H264
import MediaCore
import SwiftVT
// An access unit delimiter in Annex B: one NAL unit, 2 bytes, with a 4-byte length once converted.
var builder = H264SampleBuilder()
let unit = try ([0, 0, 0, 1, 0x09, 0xF0] as [UInt8]).withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
print("converted \(unit.convertedBytes ?? [])")
SWIFT
output="$(cd "$work/consumer" && swift build 2>&1)" || {
    echo "$output" | tail -20 >&2
    echo "package-as-dependency: a package depending on SwiftVT by version does not build (above)" >&2
    exit 1
}
result="$("$work/consumer/.build/debug/Consumer")"
if [ "$result" != "converted [0, 0, 0, 2, 9, 240]" ]; then
    echo "package-as-dependency: the consumer printed '$result'" >&2
    exit 1
fi
echo "package-as-dependency: OK (MediaCore, H264 and SwiftVT as a versioned dependency; $result)"
