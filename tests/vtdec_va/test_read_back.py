"""Image read-back: the faster of vaDeriveImage and vaGetImage, measured; vaGetImage when derive
is refused. The first pictures try both; then the faster is kept. Derived maps of this driver's
surfaces are system memory (fast, no copy); with SWIFTVT_VA_DERIVE_NS_PER_BYTE=20 they cost what
iHD's uncached memory does, and vaGetImage must win; with SWIFTVT_VA_NO_DERIVE=1
(nvidia-vaapi-driver) only vaGetImage is left. The driver's report counts each call. Downstream
taking NV12 as well (videoconvert): the surfaces' own layout goes out, no de-interleave.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_read_back.py
"""
import os
import re

import pytest

# The nvdec personality refuses derive altogether (nvidia-vaapi-driver): vaGetImage there.
FAST_DERIVE = "copy" if os.environ.get("SWIFTVT_VA_PERSONALITY") == "nvdec" else "derive"
CASES = {"derive-in-system-memory": ("SWIFTVT_VA_DERIVE_NS_PER_BYTE", 0, FAST_DERIVE),
         "derive-as-slow-as-uncached-memory": ("SWIFTVT_VA_DERIVE_NS_PER_BYTE", 20, "copy"),
         "derive-refused": ("SWIFTVT_VA_NO_DERIVE", 1, "copy")}


@pytest.mark.parametrize("case", CASES)
def test_the_faster_read_back_is_kept(vtdec, small, case):
    variable, value, expected = CASES[case]
    result = vtdec.decode(small.path, "require", **{variable: value})
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == small.ref_md5
    # One image-reads line per display terminated (a plugin-load probe may add one that read nothing).
    derived, copied = result.report.image_reads()
    kept, other = (derived, copied) if expected == "derive" else (copied, derived)
    assert kept > 90 and other <= 2, f"vaDeriveImage {derived}, vaGetImage {copied} (expected mostly {expected})"


def test_downstream_taking_nv12_gets_the_surfaces_nv12(vtdec, small):
    """vtdec logs the pixel format by its CoreVideo code (420v/420f: NV12); nothing else says which
    layout went out, so the INFO line is what is checked."""
    result = vtdec.decode(small.path, "require", timeout=120, downstream="videoconvert ! video/x-raw,format=I420")
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == small.ref_md5
    assert re.search("output 176x144 420[vf]", result.log), re.findall("output 176x144 [a-z0-9]*", result.log)
