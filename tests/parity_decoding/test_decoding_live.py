"""Issue 32 rows 7 and 8, live input beside avdec_h264 (live_latency.py: the latency the decoder
adds, the frames inside it when a picture leaves, the pictures left for EOS): the latency vtdec
reports equals avdec_h264's, it holds no more frames and leaves no more for EOS; on a
constrained-baseline zerolatency stream through RTP it adds no latency, each picture leaves while
its own frame is handled, and none waits for EOS."""
import re

import pytest

LINE = r"latency_ms ([0-9.]+) held_max ([0-9]+) .*after_eos ([0-9]+)"


@pytest.fixture(scope="module")
def live(helper, decoding_env):
    """live(kind): (vtdec's line, avdec_h264's line) on the baseline or bframes stream, run once."""
    lines = {}

    def run_kind(kind):
        if kind not in lines:
            last = [(helper("live_latency", decoder, kind, env=decoding_env) or [""])[-1]
                    for decoder in ("vtdec hardware=disable", "avdec_h264")]
            lines[kind] = tuple(last)
        return lines[kind]
    return run_kind


@pytest.mark.parametrize("kind", ["baseline", "bframes"])
def test_rows7_8_vtdec_reports_on_live_input(live, kind):
    ours, _ = live(kind)
    assert re.fullmatch(LINE + " frames 60", ours), f"vtdec: {ours!r}"


@pytest.mark.parametrize("kind", ["baseline", "bframes"])
def test_rows7_8_vtdec_latency_and_held_frames_no_more_than_avdec_h264s(live, kind):
    ours, peer = live(kind)
    mine, theirs = re.fullmatch(LINE + " frames 60", ours), re.match(LINE, peer)
    assert mine and theirs, f"vtdec {ours!r}; avdec_h264 {peer!r}"
    latency, held, after = mine.groups()
    assert latency == theirs.group(1) and int(held) <= int(theirs.group(2)) and int(after) <= int(theirs.group(3)), \
        (f"live {kind} stream: vtdec {ours!r}; avdec_h264 {peer!r} (latency must be equal, held frames and frames "
         "after EOS no more)")


def test_rows7_8_zerolatency_stream_adds_nothing(live):
    ours, _ = live("baseline")
    mine = re.fullmatch(LINE + " frames 60", ours)
    assert mine and mine.groups() == ("0.0", "1", "0"), \
        f"a zerolatency stream must add no latency, hold no other frame and leave nothing for EOS: {ours!r}"
