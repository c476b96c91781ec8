"""swiftvt-example-multipass (the WWDC multi-pass flow: MultiPassStorage + FrameSilo +
beginPass/endPass; was tests/examples.sh): 240 frames of 320x240 at 400 kbit/s: more than one
pass, a stream FFmpeg decodes to every frame, the bit rate within 5 % of the target (as the
program reports it)."""
import re
import subprocess

import pytest

from swiftvt_testing import run


@pytest.fixture(scope="module")
def multipass(examples_bin, tmp_path_factory):
    output = tmp_path_factory.mktemp("multipass") / "multipass.h264"
    result = subprocess.run([str(examples_bin / "swiftvt-example-multipass"), str(output), "--frames", "240", "--width",
                             "320", "--height", "240", "--bitrate", "400000"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=600)
    return result.returncode, result.stdout, output


def test_multipass_exits_0(multipass):
    assert multipass[0] == 0, multipass[1][-2000:]


def test_multipass_runs_more_than_one_pass(multipass):
    match = re.search(r"after (\d+) pass\(es\)", multipass[1])
    assert match and int(match.group(1)) >= 2, multipass[1][-1000:]


def test_multipass_every_frame(multipass):
    assert run(["ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                multipass[2]], None, check=False).strip() == "240"


def test_multipass_decodes_without_an_error(probe, multipass):
    assert probe.decode_errors(multipass[2]) == ""


def test_multipass_bit_rate_within_5_percent(multipass):
    match = re.search(r"\((-?[0-9.]*) %\)", multipass[1])
    assert match and -5 <= float(match.group(1)) <= 5, multipass[1][-1000:]
