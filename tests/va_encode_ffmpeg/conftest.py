"""Fixtures for the tests of FFmpeg's own VA-API encoder (h264_vaapi, an independent client) on the
encoding side of SwiftVT's software VA driver (tests/va-driver/), on a private Xvfb display:
proof that the driver is a valid H.264 encoder (tests/va_encode_ffmpeg/test_*.py).

- `va_env` (session): os.environ with the driver on Xvfb (`software_va`), after requiring the corpus
  clip, FFmpeg with h264_vaapi (the plugin is not needed);
- `sources` (session): the clip looped to 36 frames (so that -g 30 starts a second IDR) and a
  152x100 cut of it at an odd offset (10x7 macroblocks, cropped right and bottom), made in a
  temporary folder;
- `encoded` (session): `encoded(NAME, SIZE, SOURCE, *OPTIONS, **DRIVER_VARIABLES)`, each run made
  once and shared by the tests that assert on it (a ClientRun, tests/lib/va_client_testing.py).
"""
import os
import shutil
import subprocess

import pytest

from swiftvt_testing import corpus_root, require, run
from va_client_testing import ffmpeg_vaapi_encode

CLIP_SIZE = "320x192"


@pytest.fixture(scope="session")
def clip():
    path = corpus_root() / "yuv" / "CiscoVT2people_320x192_12fps.yuv"
    require(path.is_file(), f"va-encode-ffmpeg: the corpus clip {path} is missing (set SWIFTVT_CORPUS to "
            "the folder holding yuv/)")
    return path


@pytest.fixture(scope="session")
def va_env(clip, software_va):
    require(shutil.which("ffmpeg"), "va-encode-ffmpeg: ffmpeg not found (Debian package ffmpeg; "
            "scripts/install-deps.sh installs it)")
    encoders = subprocess.run(["ffmpeg", "-hide_banner", "-encoders"], capture_output=True, text=True).stdout
    require("h264_vaapi" in encoders, "va-encode-ffmpeg: this ffmpeg has no h264_vaapi encoder "
            "(Debian's ffmpeg has it)")
    return software_va.env(dict(os.environ))


@pytest.fixture(scope="session")
def sources(clip, va_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("sources")
    looped, cut = work / "clip36.yuv", work / "cut152x100.yuv"
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", CLIP_SIZE]
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", "3", *raw, "-i", clip, "-f",
         "rawvideo", looped], va_env)
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", *raw, "-i", clip, "-vf", "crop=152:100:37:41", "-f",
         "rawvideo", cut], va_env)
    return {"long": looped, "cut": cut}


@pytest.fixture(scope="session")
def encoded(va_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("encoded")
    runs = {}

    def encode(name, size, source, *options, **variables):
        if name not in runs:
            runs[name] = ffmpeg_vaapi_encode(va_env, work, name, size, source, *options, **variables)
        return runs[name]

    encode.work = work
    return encode
