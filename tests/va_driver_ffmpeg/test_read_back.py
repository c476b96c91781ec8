"""Both image read-back paths (vaDeriveImage; vaCreateImage + vaGetImage when derive is refused)
give BA_MW_D.264's reference pictures.

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_read_back.py
"""
import pytest


@pytest.mark.parametrize("no_derive", [0, 1], ids=["derive-allowed", "derive-refused"])
def test_pictures_are_exact(ffmpeg_va, small, no_derive):
    result = ffmpeg_va.decode(small.path, SWIFTVT_VA_NO_DERIVE=no_derive)
    assert result.status == 0, result.log[-1500:]
    assert result.md5 == small.ref_md5
