"""Per-frame statistics (issue 36 row "per-frame statistics"): vtenc frame-stats=true posts the element
message vtenc-frame-stats for every frame (nvh264enc's frame-stats; VideoToolbox's
CalculateMeanSquaredError for the MSE): its bits add up to the samples the MP4 stores (ffprobe),
its frame types are the coded ones (IDR first, B pictures where x264 reorders), its PTS are the
buffers', and x264's per-frame luma PSNR agrees with FFmpeg's PSNR-Y of the decoded file against
the source. vtenc_h265 posts the same fields without mse-y/psnr-y (x265 measures PSNR only when it
logs at info level); with frame-stats off nothing is posted."""
import re
import subprocess

import pytest

from swiftvt_testing import run

SOURCE = ("videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,"
          "framerate=30/1")
FIELD = re.compile(r"([a-z-]+)=\((\w+)\)([^,;]+)")


def launch_with_messages(env, description):
    result = subprocess.run(["gst-launch-1.0", "-m", *description.split()], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    stats = []
    for line in result.stdout.splitlines():
        if "(element): vtenc-frame-stats," in line:
            stats.append({name: (float(value) if kind in ("double", "guint64") else value)
                          for name, kind, value in FIELD.findall(line.split("vtenc-frame-stats,", 1)[1])})
    return stats


def packet_sizes(env, path):
    return [int(size) for size in run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
                                       "packet=size", "-of", "csv=p=0", path], env).split()]


@pytest.fixture(scope="module")
def h264(controls_env, work):
    raw, mp4 = work / "ball.yuv", work / "stats.mp4"
    # videotestsrc draws the same pictures every run: the source once more, raw, for the PSNR.
    run(["gst-launch-1.0", "-q", *SOURCE.split(), "!", "filesink", f"location={raw}"], controls_env)
    stats = launch_with_messages(controls_env, f"{SOURCE} ! vtenc frame-stats=true bitrate=300 ! mp4mux ! "
                                 f"filesink location={mp4}")
    return stats, raw, mp4


def test_one_message_per_frame(h264):
    assert len(h264[0]) == 60


def test_bits_add_up_to_the_stored_samples(h264, controls_env):
    stats, _, mp4 = h264
    assert sorted(int(s["bits"]) // 8 for s in stats) == sorted(packet_sizes(controls_env, mp4))


def test_frame_types_and_keyframes(h264):
    stats = h264[0]
    types = [s["frame-type"] for s in stats]
    assert types[0] == "IDR" and stats[0]["keyframe"] == "true"
    assert "B" in types and "P" in types, types
    assert all((s["keyframe"] == "true") == (s["frame-type"] == "IDR") for s in stats)
    assert all(0 <= s["qp"] <= 51 for s in stats)


def test_time_stamps_are_one_frame_apart_in_presentation_order(h264):
    pts = sorted(s["pts"] for s in h264[0])
    assert all(abs((b - a) - 1e9 / 30) < 2 for a, b in zip(pts, pts[1:])), pts[:5]


def test_psnr_y_agrees_with_ffmpeg(h264, controls_env):
    stats, raw, mp4 = h264
    ours = sum(s["psnr-y"] for s in stats) / len(stats)
    log = subprocess.run(["ffmpeg", "-v", "error", "-i", str(mp4), "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s",
                          "320x240", "-framerate", "30", "-i", str(raw), "-lavfi", "[0:v][1:v]psnr=stats_file=-",
                          "-f", "null", "-"], env=controls_env, capture_output=True, text=True, timeout=120).stdout
    values = [float(field.split(":")[1]) for line in log.splitlines() for field in line.split()
              if field.startswith("psnr_y:")]
    assert len(values) == 60
    theirs = sum(values) / len(values)
    assert abs(ours - theirs) < 0.05, f"x264 says {ours:.3f} dB, FFmpeg {theirs:.3f} dB"
    assert all(abs(s["mse-y"] - 255 ** 2 / 10 ** (s["psnr-y"] / 10)) < 1e-6 * max(1, s["mse-y"]) for s in stats)


def test_hevc_posts_without_mse(controls_env, work):
    mp4 = work / "stats-h265.mp4"
    stats = launch_with_messages(controls_env, f"{SOURCE} ! vtenc_h265 frame-stats=true ! mp4mux ! "
                                 f"filesink location={mp4}")
    assert len(stats) == 60 and stats[0]["frame-type"] == "IDR"
    assert sorted(int(s["bits"]) // 8 for s in stats) == sorted(packet_sizes(controls_env, mp4))
    assert not any("mse-y" in s for s in stats)


def test_off_by_default(controls_env):
    assert launch_with_messages(controls_env, f"{SOURCE} ! vtenc ! fakesink") == []
