"""pipelines/multipass-farm.py --codec h265 (issue 37 item 3): the same multi-pass job coding HEVC
with x265 on every worker, spliced into one hvc1 track.

The patterns clip (320x240, 240 frames, 8 s) at 300 kbit/s in chunks of 2 s on two workers: ffprobe
reads HEVC in an hvc1 sample entry with an hvcC record and every frame, libavcodec decodes it
without an error, every chunk begins with an IRAP picture, the bit rate is within 5 % of the target
and the quality is near the H.264 job's at the same target. An interlaced input is refused in one
line pointing at --codec h264 (x265 codes progressive pictures only); a job folder of the other
codec is not resumed. Needs what tests/farm/test_cluster.py needs.
"""
import json
import sys

import pytest

from farm_testing import PATTERN_FRAMES, kbps, psnr_y, stream_field
from swiftvt_testing import ROOT, run

TARGET = 300
SECONDS = PATTERN_FRAMES / 30


@pytest.fixture(scope="module")
def hevc_job(farm_env, patterns_clip, tmp_path_factory):
    from farm_testing import Farm
    folder = tmp_path_factory.mktemp("hevc")
    farm = Farm(farm_env, folder)
    timings = folder / "timings.json"
    result = farm.ok(patterns_clip, folder / "out.mp4", "--codec", "h265", "--bitrate", TARGET, "--workers", 2,
                     "--chunk-seconds", 2, "--timings", timings, timeout=300)
    result.timings = timings
    return result


def test_output_is_hevc_hvc1_with_every_frame(farm_env, hevc_job):
    probed = [stream_field(farm_env, hevc_job.output, "codec_name"),
              stream_field(farm_env, hevc_job.output, "codec_tag_string"),
              stream_field(farm_env, hevc_job.output, "nb_read_frames", "-count_frames")]
    assert probed == ["hevc", "hvc1", str(PATTERN_FRAMES)], "codec, sample entry, frames"


def test_output_has_an_hvcc_record(farm_env, hevc_job):
    assert b"hvcC" in hevc_job.output.read_bytes(), "no hvcC record"
    assert int(stream_field(farm_env, hevc_job.output, "extradata_size")) > 22, "the hvcC record is empty"


def test_output_decodes_cleanly(probe, hevc_job):
    assert probe.decode_errors(hevc_job.output) == ""


def test_every_chunk_starts_with_a_key_frame(farm_env, hevc_job):
    """Where chunks meet the stream has an IRAP picture (x265's closed GOPs begin with IDR, 8.1.3),
    so the splice needs no rewriting (H.265 has no idr_pic_id)."""
    flags = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                 "-of", "csv=p=0", hevc_job.output], farm_env).split()
    key_times = sorted(round(float(t) * 30) for t, f in (line.split(",", 1) for line in flags) if "K" in f)
    starts = [round(c["start_s"] * 30) for c in json.loads(hevc_job.timings.read_text())["chunks"]]
    assert len(starts) > 1
    assert set(starts) <= set(key_times), f"chunk starts {starts}, key frames at {key_times}"


def test_output_bit_rate_within_5_percent(farm_env, hevc_job):
    rate = kbps(farm_env, hevc_job.output, SECONDS)
    print(f"farm HEVC: {rate:.2f} kbit/s for {TARGET}")
    assert abs(rate / TARGET - 1) <= 0.05, f"{rate:.2f} kbit/s"


def test_output_psnr_near_the_h264_jobs(farm_env, hevc_job, patterns_clip, farm, tmp_path):
    """HEVC at the same rate looks at least about as good as H.264 (x265 vs x264, both multi-pass)."""
    h264 = farm.ok(patterns_clip, tmp_path / "h264.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 2,
                   timeout=300)
    hevc_psnr = psnr_y(farm_env, hevc_job.output, patterns_clip)
    h264_psnr = psnr_y(farm_env, h264.output, patterns_clip)
    print(f"farm PSNR-Y at {TARGET} kbit/s: HEVC {hevc_psnr:.2f} dB, H.264 {h264_psnr:.2f} dB")
    assert hevc_psnr >= h264_psnr - 1.0


def test_interlaced_input_is_refused_in_one_line(farm_env, farm, tmp_path):
    source = tmp_path / "interlaced.mp4"
    run(["gst-launch-1.0", "-q", "videotestsrc", "pattern=ball", "num-buffers=30", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1,interlace-mode=interleaved,"
         "field-order=top-field-first", "!", "x264enc", "interlaced=true", "!", "mp4mux", "!", "filesink",
         f"location={source}"], farm_env)
    result = farm.run(source, tmp_path / "out.mp4", "--codec", "h265", "--bitrate", 500, "--workers", 1)
    assert result.status != 0
    assert "interlaced" in result.log and "--codec h264" in result.log, result.log[-2000:]
    assert not result.output.exists(), "a failed job leaves no OUTPUT"


def test_a_job_folder_of_the_other_codec_is_not_resumed():
    sys.path.insert(0, str(ROOT / "pipelines" / "lib"))
    from swiftvt_farm import jobfolder
    identity = {"version": jobfolder.IDENTITY_VERSION, "input_size": 1, "input_sha256": "x", "farm_tool_sha256": "y",
                "bits_per_second": 300000, "max_passes": 3, "encoder_threads": 1, "chunks": [[0, 30]],
                "codec": "h265"}
    changed = jobfolder.JobFolder.mismatch(dict(identity, codec="h264"), identity)
    assert changed == "--codec differs (h264 then, h265 now)"
    saved_before_codec_existed = {k: v for k, v in identity.items() if k != "codec"}
    assert jobfolder.JobFolder.mismatch(saved_before_codec_existed, identity) is not None
    assert jobfolder.JobFolder.mismatch(saved_before_codec_existed, dict(identity, codec="h264")) is None
    assert jobfolder.JobFolder.mismatch(identity, identity) is None
