"""Pictures in flight (was section 6 of tests/vtenc-va.sh): SWIFTVT_VA_ASYNC_DEPTH 1 and 4, the device
completing 20 ms after vaEndPicture. The same stream and time stamps either way; 4 in flight overlap
the device's latency (62 x 20 ms waited one by one take over a second); the driver checks that no
source surface is written before its picture is complete (a VALIDATION line)."""
import re
import subprocess
import time

import pytest

from va_client_testing import clean, decoded_md5, driver_complaint


@pytest.fixture(scope="module")
def depths(vtenc, sources, va_env, encoder_device):
    runs = {}
    for depth in (1, 4):
        output = vtenc.work / f"depth-{depth}.mp4"
        started = time.monotonic()
        result, report, _ = vtenc.pipeline(
            f"depth-{depth}", *sources["small"].pipeline, "!", "vtenc", "name=vtenc", "hardware=require",
            "max-keyframe-interval=24", "!", "h264parse", "!", "mp4mux", "!", "filesink", f"location={output}",
            SWIFTVT_VA_LATENCY_MS=20, SWIFTVT_VA_ASYNC_DEPTH=depth)
        seconds = time.monotonic() - started
        packets = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=pts,dts,flags", "-of", "csv=p=0",
                                  str(output)], env=va_env, capture_output=True, text=True, timeout=120).stdout
        coded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(output), "-c", "copy", "-bsf:v", "h264_mp4toannexb",
                                "-f", "h264", "-"], env=va_env, capture_output=True, timeout=120).stdout
        runs[depth] = {"result": result, "report": report, "output": output, "seconds": seconds, "packets": packets,
                       "coded": coded}
    return runs


def frame_delay(result):
    """The frames of delay vtenc announced (its INFO line "... N frames of delay")."""
    found = re.search(r"(\d+) frames of delay", result.log)
    return int(found.group(1)) if found else None


def test_both_complete(depths):
    for depth, run in depths.items():
        assert run["result"].ended_by == "eos", f"depth {depth}:\n{run['result'].log[-3000:]}"


def test_same_packets(depths):
    assert depths[1]["packets"] and depths[1]["packets"] == depths[4]["packets"]


def test_same_coded_stream(depths):
    assert depths[1]["coded"] and depths[1]["coded"] == depths[4]["coded"]


def test_four_in_flight_lossless(depths, sources, va_env):
    assert decoded_md5(va_env, depths[4]["output"], demux=("qtdemux",)) == sources["small"].md5


def test_delay_counts_pictures_in_flight(depths):
    """2 frames of delay with one picture in flight (the two B pictures), 5 with four (3 more)."""
    assert (frame_delay(depths[1]["result"]), frame_delay(depths[4]["result"])) == (2, 5)


def test_driver_reports_clean(depths):
    for depth, run in depths.items():
        assert clean(run["report"]), f"depth {depth}: {driver_complaint(run['report'])}"


def test_four_in_flight_faster(depths):
    """The device's 20 ms per picture overlap: 4 in flight take under 3/4 of the time of 1."""
    assert depths[4]["seconds"] * 4 < depths[1]["seconds"] * 3, \
        f"4 in flight {depths[4]['seconds']:.2f} s, 1 in flight {depths[1]['seconds']:.2f} s"
