"""Chunks shorter than the one-host GOP (issue 38 row 12): every chunk starts with an IDR picture,
so --chunk-seconds 2 on a 10-s clip codes 4 more of them than vtmultipasssink (one per 10 s and
at scene cuts) and the other frames get fewer bits. The job says so after pass 1, with the share
of the bits the extra IDR pictures took beyond an average frame; at the default chunking, which
codes no more IDR pictures than the one-host encode, it says nothing. (On bench/farm.sh's 720p
clip at 1000 kbit/s, chunks of 2 s: 14.4 % of the bits, PSNR-Y 0.52 dB below vtmultipasssink.)
"""
import re

import pytest


@pytest.fixture(scope="module")
def clip(media):
    return media.clip("short-chunks.mp4", frames=300, pattern="smpte", encoder_options=("bframes=0",))


def test_short_chunks_are_reported_with_their_cost(farm, clip, tmp_path):
    run = farm.ok(clip, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 2)
    match = re.search(r"warning: chunks this short start (\d+) more IDR pictures than vtmultipasssink would code "
                      r"\(one per 10 s and at scene cuts\); in pass 1 they took ([0-9.]+) % of the bits", run.log)
    assert match, f"no warning about short chunks:\n{run.log[-2000:]}"
    assert int(match.group(1)) == 4
    assert 0.5 < float(match.group(2)) < 60


def test_the_default_chunks_are_not_reported(farm, clip, tmp_path):
    run = farm.ok(clip, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2)
    assert "chunks this short" not in run.log
