"""h264parse-to-avcc and vtdec against h264parse and avdec_h264 (issue 16 rows 6-9): NAL-aligned
input (from h264parse and after rtph264depay, also with SPS/PPS repeated between the slices of IDR
pictures) decodes to the reference MD5; length-prefixed (avc) data labelled byte-stream: 100
frames, the reference MD5, one WARNING (avdec_h264 decodes it too); a Matroska file with bit
errors: vtdec outputs at least avdec_h264's frames; h264parse-to-avcc's caps fields and their types
are h264parse's, over the corpus."""
import csv
import random

import pytest

from parity_testing import md5_of, negotiated_caps, reference_md5
from swiftvt_testing import corpus_root, run

QCIF_FRAME = 176 * 144 * 3 // 2


@pytest.mark.parametrize("name", ["BA_MW_D.264", "CI_MW_D.264", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264",
                                  "VID_1280x720_cabac_temporal_direct.264"])
def test_row6_nal_aligned_input_decodes_to_the_reference(runner, manifest, stream, work, name):
    output = work / f"r6-{name}.yuv"
    runner(f"filesrc location={stream(name)} ! h264parse ! video/x-h264,alignment=nal ! h264parse-to-avcc ! vtdec "
           f"! video/x-raw,format=I420 ! filesink location={output}", timeout=300, expect="eos")
    assert md5_of(output) == reference_md5(manifest, name)


def test_row6_after_rtph264depay_decodes_to_the_reference(runner, manifest, stream, work):
    output = work / "r6-rtp.yuv"
    runner(f"filesrc location={stream('BA_MW_D.264')} ! h264parse ! rtph264pay ! rtph264depay ! "
           "video/x-h264,alignment=nal "
           f"! h264parse-to-avcc ! vtdec ! video/x-raw,format=I420 ! filesink location={output}",
           timeout=120, expect="eos")
    assert md5_of(output) == reference_md5(manifest, "BA_MW_D.264")


# rtph264pay config-interval=-1 repeats SPS and PPS before every IDR slice, so with several slices
# per picture they sit between two slices of one picture (against 7.4.1.2.3). h264parse-to-avcc
# keeps such a picture whole (before the fix it cut it at the SPS: 3 and 14 pictures concealed,
# MD5 420c22c1... and bac27080...). The peers in the same place, h264parse ! avdec_h264, give those
# same wrong MD5s today: printed, not required.
@pytest.mark.parametrize("name", ["SVA_Base_B.264", "test_cif_I_CABAC_slice.264"])
def test_row6_sps_pps_between_the_slices_of_an_idr_picture(runner, manifest, stream, work, name):
    md5s = {}
    for chain in ("h264parse-to-avcc ! vtdec", "h264parse ! avdec_h264"):
        output = work / f"r6-repeat-{name}-{chain.split()[0]}.yuv"
        runner(f"filesrc location={stream(name)} ! h264parse ! rtph264pay config-interval=-1 ! rtph264depay "
               f"! video/x-h264,alignment=nal ! {chain} ! video/x-raw,format=I420 ! filesink location={output}",
               timeout=300, expect="eos")
        md5s[chain] = md5_of(output)
    print(f"the peers (h264parse ! avdec_h264) give {md5s['h264parse ! avdec_h264']}, "
          f"the reference is {reference_md5(manifest, name)}")
    assert md5s["h264parse-to-avcc ! vtdec"] == reference_md5(manifest, name)


@pytest.fixture(scope="module")
def avc_labelled_byte_stream(runner, parity_env, stream, work):
    """BA_MW_D.264 in Matroska (avc) read with byte-stream caps, through vtdec and avdec_h264."""
    mkv = work / "ba.mkv"
    run(["ffmpeg", "-v", "error", "-y", "-r", "25", "-i", stream("BA_MW_D.264"), "-c", "copy", mkv], parity_env)
    results = {}
    for decoder in ("vtdec", "avdec_h264"):
        output = work / f"r7-{decoder}.yuv"
        result = runner(f"filesrc location={mkv} ! matroskademux ! capssetter "
                        "caps=video/x-h264,stream-format=(string)byte-stream "
                        f"! {decoder} name=dec ! video/x-raw,format=I420 ! filesink location={output}",
                        timeout=120, expect="eos")
        results[decoder] = (result, output)
    return results


@pytest.mark.parametrize("decoder", ["vtdec", "avdec_h264"])
def test_row7_avc_data_labelled_byte_stream_decodes(avc_labelled_byte_stream, manifest, decoder):
    result, output = avc_labelled_byte_stream[decoder]
    frames = output.stat().st_size // QCIF_FRAME if output.is_file() else 0
    assert (frames, md5_of(output)) == (100, reference_md5(manifest, "BA_MW_D.264")), result.log[-2000:]


def test_row7_vtdec_warns_that_the_caps_say_byte_stream(avc_labelled_byte_stream):
    result, _ = avc_labelled_byte_stream["vtdec"]
    ours = [w for w in result.warnings if w["element"] == "dec"]
    assert any("length-prefixed NAL units" in w["message"] for w in ours), result.warnings


@pytest.fixture(scope="module")
def damaged_source(parity_env, stream, work):
    mkv = work / "ci.mkv"
    run(["ffmpeg", "-v", "error", "-y", "-r", "25", "-i", stream("CI_MW_D.264"), "-c", "copy", mkv], parity_env)
    return mkv


# 200 flipped bits with fixed seeds. Seeds 1 and 5 are files where vtdec lost frames to a damaged
# SPS taken outside an IDR access unit and to a damaged NAL length dropping the whole frame (77 and
# 87 frames against avdec_h264's 79 and 88).
@pytest.mark.parametrize("seed", [1, 5])
def test_row8_bit_errors_vtdec_outputs_at_least_avdec_h264s_frames(runner, damaged_source, work, seed):
    data = bytearray(damaged_source.read_bytes())
    chance = random.Random(seed)
    for _ in range(200):
        position = chance.randrange(2000, len(data))  # the headers stay readable
        data[position] ^= 1 << chance.randrange(8)
    damaged = work / f"damaged-{seed}.mkv"
    damaged.write_bytes(bytes(data))
    counts = {}
    for decoder in ("vtdec", "avdec_h264"):
        output = work / f"r8-{seed}-{decoder}.yuv"
        runner(f"filesrc location={damaged} ! matroskademux ! {decoder} ! video/x-raw,format=I420 ! "
               f"filesink location={output}",
               timeout=120)
        counts[decoder] = output.stat().st_size // QCIF_FRAME if output.is_file() else 0
    assert counts["vtdec"] >= counts["avdec_h264"] and counts["vtdec"] > 0, counts


def comparable_streams():
    """The corpus streams both parsers take (the damaged and SVC streams are not compared), read at
    collection; without the corpus one placeholder, which the `manifest` fixture requires."""
    table = corpus_root() / "h264" / "MANIFEST.tsv"
    if not table.is_file():
        return ["(no corpus)"]
    with open(table, newline="") as rows:
        names = [row["file"] for row in csv.DictReader(rows, delimiter="\t")]
    return [n for n in names if not ("IDR_LOST" in n or n.startswith("Error_") or n.startswith("sps_subsetsps"))]


def field_types(env, description):
    return {(name, kind) for name, (kind, _) in negotiated_caps(env, description)["fields"].items()}


@pytest.mark.parametrize("name", comparable_streams())
def test_row9_caps_fields_and_types_are_h264parses(parity_env, manifest, name):
    path = corpus_root() / "h264" / name
    theirs = field_types(parity_env, f"filesrc location={path} ! h264parse ! "
                         "video/x-h264,stream-format=avc,alignment=au")
    ours = field_types(parity_env, f"filesrc location={path} ! h264parse-to-avcc")
    assert theirs, "h264parse negotiated no caps"
    assert not theirs - ours, f"h264parse's fields missing or typed differently: {sorted(theirs - ours)}"


def test_row9_more_than_10_streams_compared(manifest):
    assert len([n for n in comparable_streams() if n in manifest]) > 10


def test_row9_bit_depth_luma_as_uint_negotiates(parity_env, stream):
    run(["gst-launch-1.0", "-q", "filesrc", f"location={stream('BA_MW_D.264')}", "!", "h264parse-to-avcc", "!",
         "video/x-h264,bit-depth-luma=(uint)8", "!", "fakesink"], parity_env, timeout=60)
