"""swiftvt-example-decode (seed case 2; was tests/examples.sh): corpus streams (Baseline, Main with
CABAC and B pictures, High with scaling lists) decoded to raw frames whose MD5 equals MANIFEST.tsv's
ref_md5 (column 8) and whose count it reports (column 7), in software and, on the project's
software VA driver and on its software CUDA double, with --hardware require (which must say it
decoded with VA-API, or NVDEC); a file that is not H.264: exit 1 and no output file."""
import hashlib
import os
import subprocess

import pytest

from swiftvt_testing import corpus_root

CASES = [("BA_MW_D.264", "disable"), ("Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "disable"),
         ("test_scalinglist_jm.264", "disable"), ("Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "require"),
         ("test_scalinglist_jm.264", "require-cuda")]
_done = {}


@pytest.fixture(params=CASES, ids=[f"{f}-{h}" for f, h in CASES])
def decoded(request, examples_bin, manifest, tmp_path_factory):
    """(exit status, log, MD5 of the frames, the manifest's fields) of one run, once per case."""
    file, hardware = request.param
    if request.param not in _done:
        env = dict(os.environ)
        if hardware == "require":
            env = request.getfixturevalue("software_va").env(env)
        elif hardware == "require-cuda":
            # No VA device (no DISPLAY, no render node here): the CUDA double is the hardware.
            env = request.getfixturevalue("software_cuda").env({k: v for k, v in env.items() if k != "DISPLAY"})
            hardware = "require"
        work = tmp_path_factory.mktemp("decode")
        frames = work / "frames.yuv"
        result = subprocess.run([str(examples_bin / "swiftvt-example-decode"), str(corpus_root() / "h264" / file),
                                 str(frames), "--hardware", hardware], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=300)
        digest = hashlib.md5(frames.read_bytes()).hexdigest() if frames.exists() else None
        _done[request.param] = (result.returncode, result.stdout, digest, manifest[file])
    return _done[request.param]


def test_decode_exits_0(decoded):
    assert decoded[0] == 0, decoded[1][-2000:]


def test_decode_md5_is_the_manifests(decoded):
    assert decoded[2] == decoded[3][7]


def test_decode_reports_every_frame(decoded):
    assert any(line.startswith(f"{decoded[3][6]} frames") for line in decoded[1].splitlines()), decoded[1][-1000:]


@pytest.mark.parametrize("decoded", [CASES[3]], indirect=True, ids=["require"])
def test_decode_hardware_require_uses_va_api(decoded):
    assert "VA-API" in decoded[1], f"--hardware require did not decode with VA-API: {decoded[1][-500:]}"


@pytest.mark.parametrize("decoded", [CASES[4]], indirect=True, ids=["require-cuda"])
def test_decode_hardware_require_uses_nvdec_on_cuda(decoded):
    assert "NVDEC" in decoded[1], f"--hardware require did not decode with NVDEC: {decoded[1][-500:]}"


@pytest.fixture(scope="module")
def noise(examples_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("noise")
    (work / "noise.bin").write_bytes(os.urandom(4096))
    result = subprocess.run([str(examples_bin / "swiftvt-example-decode"), str(work / "noise.bin"),
                             str(work / "noise.yuv")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return result.returncode, result.stdout, work


def test_noise_exits_1(noise):
    assert noise[0] == 1, noise[1][-1000:]


def test_noise_writes_no_output(noise):
    assert not (noise[2] / "noise.yuv").exists()


def test_noise_leaves_no_partial_output(noise):
    assert not (noise[2] / "noise.yuv.partial").exists()
