"""The interface of every element (pads, caps, properties, rank), as gst-inspect-1.0 prints it, is
checked in under docs/gst-inspect/ (was tests/inspect-snapshot.sh); each element's output is diffed
against it so an interface change is seen in review. After an intended change:
SWIFTVT_UPDATE_SNAPSHOTS=1 meson test -C build inspect-snapshot (writes every snapshot; the tests
then skip).

The interface as on a machine without a VA device (vtdec_hw and vtenc_h264_hw rank none, vtdec_hw
with every profile), also where one exists: with a device their rank and sink caps follow it, which
tests/autoplug/ checks on the software VA driver. One test per checked-in snapshot, and one that
every element of the plugin has a snapshot.

Elements built into test builds only (Elements.swift's testBuildOnly, in the debug plugin that
`swift build --build-tests` makes; Tests/SwiftVTElementsTests/InterfaceSnapshotTests.swift runs
this suite on it) keep their snapshots in docs/gst-inspect/test-build/, so that docs/gst-inspect/
lists what users get; an update writes a snapshot where it already is.
"""
import difflib
import os
import re

import pytest

from swiftvt_testing import ROOT, run

SNAPSHOTS = ROOT / "docs" / "gst-inspect"
TEST_BUILD_SNAPSHOTS = SNAPSHOTS / "test-build"


def snapshot_of(name):
    """Where `name`'s snapshot is, or goes: docs/gst-inspect/, or test-build/ when it is there."""
    test_build = TEST_BUILD_SNAPSHOTS / f"{name}.txt"
    return test_build if test_build.is_file() else SNAPSHOTS / f"{name}.txt"


UPDATE = os.environ.get("SWIFTVT_UPDATE_SNAPSHOTS") == "1"


@pytest.fixture(scope="module")
def inspect_env(plugin_env):
    env = {k: v for k, v in plugin_env.items() if k != "DISPLAY"}
    env["LIBVA_DRIVER_NAME"] = "swiftvt-no-such-driver"
    return env


def inspect(env, element):
    """gst-inspect-1.0 ELEMENT without the file name's folder (not interface), as the snapshot has it."""
    out = run(["gst-inspect-1.0", element], env)
    return re.sub(r"^(  Filename *).*/(libgstswiftvt\.so)$", r"\1\2", out.rstrip("\n"), flags=re.M) + "\n"


@pytest.fixture(scope="module")
def elements(inspect_env):
    names = re.findall(r"^ *([a-z0-9_-]*): ", run(["gst-inspect-1.0", "swiftvt"], inspect_env), re.M)
    if UPDATE:
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        for name in names:
            snapshot_of(name).write_text(inspect(inspect_env, name))
    return names


def test_every_element_has_a_snapshot(elements):
    missing = [name for name in elements if not snapshot_of(name).is_file()]
    assert missing == [], f"no snapshot for {missing} in {SNAPSHOTS}; run with SWIFTVT_UPDATE_SNAPSHOTS=1"


@pytest.mark.parametrize("element", sorted(p.stem for p in SNAPSHOTS.glob("*.txt")))
def test_interface_matches_the_snapshot(inspect_env, elements, element):
    if UPDATE:
        pytest.skip("SWIFTVT_UPDATE_SNAPSHOTS=1: the snapshots were written")
    assert element in elements, f"{element} has a snapshot but is not in the plugin"
    expected = (SNAPSHOTS / f"{element}.txt").read_text()
    actual = inspect(inspect_env, element)
    assert actual == expected, f"the interface of {element} changed:\n" + "".join(
        difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "snapshot", "gst-inspect-1.0"))


def test_test_build_elements_match_their_snapshots(inspect_env, elements):
    """The elements of test builds that this plugin has (none in a release build; the debug
    plugin's throwaway elements under SwiftVTElementsTests) against docs/gst-inspect/test-build/."""
    if UPDATE:
        pytest.skip("SWIFTVT_UPDATE_SNAPSHOTS=1: the snapshots were written")
    changed = []
    for snapshot in sorted(TEST_BUILD_SNAPSHOTS.glob("*.txt")):
        if snapshot.stem in elements and inspect(inspect_env, snapshot.stem) != snapshot.read_text():
            changed.append(snapshot.stem)
    assert changed == [], f"the interface of {changed} changed against docs/gst-inspect/test-build/"
