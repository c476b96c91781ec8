"""MediaCore, H264 and SwiftVT are offered as SwiftPM libraries (README): another package must be
able to depend on them by version (was tests/package-as-dependency.sh). SwiftPM refuses a versioned
dependency whose targets carry unsafe compiler flags ("the target 'H264' in product 'H264' contains
unsafe build flags"), so this builds a small consumer package against a tagged clone of the working
tree (its committed HEAD plus uncommitted changes) and runs it: it reads an access unit with
H264SampleBuilder. The build runs once (module fixture); two tests look at it."""
import subprocess

import pytest

from swiftvt_testing import ROOT, require_tools

PACKAGE = """// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "Consumer",
    dependencies: [.package(url: "file://{source}", exact: "1.0.0")],
    targets: [
        .executableTarget(name: "Consumer", dependencies: [
            .product(name: "MediaCore", package: "swiftvt"), .product(name: "H264", package: "swiftvt"),
            .product(name: "SwiftVT", package: "swiftvt"),
        ])
    ])
"""
MAIN = """import H264
import MediaCore
import SwiftVT
// An access unit delimiter in Annex B: one NAL unit, 2 bytes, with a 4-byte length once converted.
var builder = H264SampleBuilder()
let unit = try ([0, 0, 0, 1, 0x09, 0xF0] as [UInt8]).withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
print("converted \\(unit.convertedBytes ?? [])")
"""


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@localhost", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def consumer(tmp_path_factory):
    """(swift build's exit status and output, the consumer's folder)."""
    require_tools("swift", "git")
    work = tmp_path_factory.mktemp("package")
    source = work / "swiftvt"
    source.mkdir()
    # The source as a git repository with a version tag (a versioned dependency needs one).
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True, timeout=60).stdout
    subprocess.run(["xargs", "-0", "cp", "--parents", "-t", str(source)], cwd=ROOT, input=files, capture_output=True,
                   timeout=300)
    git("init", "-q", cwd=source)
    git("add", "-A", cwd=source)
    git("commit", "-q", "-m", "snapshot", cwd=source)
    git("tag", "1.0.0", cwd=source)
    package = work / "consumer"
    (package / "Sources" / "Consumer").mkdir(parents=True)
    (package / "Package.swift").write_text(PACKAGE.format(source=source))
    (package / "Sources" / "Consumer" / "main.swift").write_text(MAIN)
    built = subprocess.run(["swift", "build"], cwd=package, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=1800)
    return built.returncode, built.stdout, package


def test_a_package_depending_on_swiftvt_by_version_builds(consumer):
    assert consumer[0] == 0, f"a package depending on SwiftVT by version does not build:\n{consumer[1][-3000:]}"


def test_the_consumer_reads_an_access_unit(consumer):
    assert consumer[0] == 0
    printed = subprocess.run([str(consumer[2] / ".build" / "debug" / "Consumer")], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    assert printed == "converted [0, 0, 0, 2, 9, 240]"
