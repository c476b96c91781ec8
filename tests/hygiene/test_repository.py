"""The repository itself (was tests/hygiene.sh): no merge conflict markers left in a tracked file
(a README once carried one through a merge and a review), and no build output, media file or
Package.resolved tracked. Skipped where the source is not a git checkout."""
import re
import subprocess

import pytest

from swiftvt_testing import ROOT


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def checkout():
    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip(f"hygiene: {ROOT} is not a git checkout; nothing to check")


def test_no_merge_conflict_markers(checkout):
    """The three markers git writes, each at the start of a line; "=======" alone as a whole line."""
    markers = git("grep", "-n", "-I", "-E", "^(<<<<<<< |>>>>>>> |=======$)", "--", ".").stdout
    assert markers == "", f"merge conflict markers in tracked files:\n{markers}"


TRACKED_BY_MISTAKE = re.compile(r"(^|/)(\.build[^/]*|build[^/]*)/|\.(mp4|mkv|264|h264|265|yuv)$"
                                r"|(^|/)Package\.resolved$")


def test_no_build_output_media_or_package_resolved_tracked(checkout):
    tracked = [path for path in git("ls-files").stdout.splitlines() if TRACKED_BY_MISTAKE.search(path)]
    assert tracked == [], "build output, media or Package.resolved tracked"
