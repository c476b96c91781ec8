"""Helpers of the h265parse-to-hvcc suite (tests/h265parse_to_hvcc/): the H.265 corpus manifest,
MD5s of decoded pictures (tests/lib/decoded_md5.py), damaged and layered copies of corpus
streams made at test time (never committed)."""
import json
import random

from swiftvt_testing import ROOT, SYSTEM_PYTHON, corpus_manifest, corpus_root, run

DECODED_MD5 = ROOT / "tests" / "lib" / "decoded_md5.py"


def manifest_path():
    return corpus_root() / "h265" / "MANIFEST.tsv"


def manifest_rows():
    """{file: row} of the H.265 corpus manifest; {} without the corpus."""
    return corpus_manifest("h265")


def stream_names():
    """The corpus streams, read at collection; without the corpus one placeholder, which the suite's
    `h265_corpus` fixture turns into a skip (a failure under SWIFTVT_REQUIRE_TEST_INPUTS)."""
    return sorted(manifest_rows()) or ["(no corpus)"]


def decode(env, description, timeout=180):
    """{"frames", "md5", "ended", "errors"} of `description` (ending in decoded video) through an
    appsink: the MD5 over the cropped planes, as the manifest's ref_md5."""
    out = run([SYSTEM_PYTHON, DECODED_MD5, description, str(timeout)], env, timeout=timeout + 30, check=False)
    lines = out.strip().splitlines()
    return json.loads(lines[-1]) if lines else {"frames": 0, "md5": None, "ended": "crashed", "errors": []}


def flip_bits(data, seed, count, keep=2000):
    """`data` with `count` bits flipped at places chosen by `seed`, the first `keep` bytes (the
    parameter sets and the first picture's header) left alone."""
    damaged = bytearray(data)
    chance = random.Random(seed)
    for _ in range(count):
        position = chance.randrange(keep, len(damaged))
        damaged[position] ^= 1 << chance.randrange(8)
    return bytes(damaged)


# A NAL unit of layer 1 (7.3.1.2: TRAIL_R, nuh_layer_id 1, nuh_temporal_id_plus1 1) with a few
# bytes of payload: what a scalable or multiview stream carries beside the base layer.
LAYER_1_NAL_UNIT = bytes([0x00, 0x00, 0x01, 0x02, 0x09, 0x80, 0x12, 0x34, 0x80])


def with_layer_nal_units(data, every=10):
    """`data` with LAYER_1_NAL_UNIT inserted before every `every`-th start code."""
    out = bytearray()
    start = 0
    found = 0
    position = data.find(b"\x00\x00\x01")
    while position >= 0:
        found += 1
        if found % every == 0:
            out += data[start:position] + LAYER_1_NAL_UNIT
            start = position
        position = data.find(b"\x00\x00\x01", position + 3)
    out += data[start:]
    return bytes(out)
