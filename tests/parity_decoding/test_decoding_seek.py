"""Issue 32 row 3: seeking in a raw byte-stream file (no index) through h264parse-to-avcc, against
h264parse (raw_seek.py: an accurate and a key-unit seek at each time, the picture each gives):
back and forth on a 10-s file, the pictures h264parse gives under the same times (frame 150 at
5 s); on a 40-s file (seeks by GstBaseParse's byte-rate estimate, where h264parse gives pictures
decoded without their references) a picture decoded with its references every time, accurate
seeks at the time asked for."""
import pytest

from swiftvt_testing import run

POSITIONS = (5, 2, 7.5, 9, 6.5, 3.2)


@pytest.fixture(scope="module")
def seeks(helper, decoding_env, seek_mp4, work):
    short, long = work / "seek.264", work / "seek40.264"
    run(["gst-launch-1.0", "-q", "filesrc", f"location={seek_mp4}", "!", "qtdemux", "!", "h264parse", "!",
         "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={short}"], decoding_env)
    long.write_bytes(short.read_bytes() * 4)

    def lines(*args):
        return [line.split() for line in helper("raw_seek", *args, env=decoding_env, timeout=300) if "->" in line]
    return {"peer": lines(short, "h264parse", *POSITIONS), "ours": lines(short, "h264parse-to-avcc", *POSITIONS),
            "long": lines(long, "h264parse-to-avcc", 30, 25.5, 12)}


def real_picture_at_the_time(line):
    """A seek line (`KIND SECONDS -> frame INDEX pts PTS ...`) that gave a picture decoded with its
    references (INDEX != -1), an accurate one at the time asked for."""
    if len(line) < 7:
        return False
    kind, target, _, _, frame, _, pts = line[:7]
    return frame != "-1" and (kind != "accurate" or float(pts) == float(target))


def test_row3_every_seek_is_reported(seeks):
    assert (len(seeks["ours"]), len(seeks["peer"]), len(seeks["long"])) == (12, 12, 6)


def test_row3_seeks_in_10_s_give_a_real_picture_at_the_time(seeks):
    wrong = [" ".join(ours) for ours, peer in zip(seeks["ours"], seeks["peer"])
             if len(ours) < 9 or len(peer) < 7 or not real_picture_at_the_time(ours)]
    assert not wrong, wrong


def test_row3_seeks_in_10_s_give_h264parses_pictures(seeks):
    differ = [f"{' '.join(ours)} (h264parse: frame {peer[4]} at {peer[6]})"
              for ours, peer in zip(seeks["ours"], seeks["peer"])
              if len(ours) >= 9 and len(peer) >= 7 and real_picture_at_the_time(ours)
              and (ours[4], ours[6]) != (peer[4], peer[6])]
    assert not differ, differ


def test_row3_seeks_in_40_s_give_a_real_picture_at_the_time(seeks):
    wrong = ["40 s: " + " ".join(line) for line in seeks["long"] if not real_picture_at_the_time(line)]
    assert not wrong, wrong
