"""The double's fault injection and validation through FFmpeg's NVDEC client on BA_MW_D.264
(100 frames): each SWIFTVT_CUDA_* variable gives the error it documents, FFmpeg reports it and
never hangs, and nothing is left at exit.

    /usr/bin/python3 -m pytest -q tests/cuda_driver_clients/test_fault_injection.py
"""
import pytest


@pytest.fixture(scope="module")
def small(manifest):
    return manifest["BA_MW_D.264"]


def decode(cuda, stream, **variables):
    output = cuda.work / "fault.yuv"
    return cuda.run(["ffmpeg", "-hide_banner", "-nostdin", "-y", "-threads", "1", "-hwaccel", "cuda",
                     "-hwaccel_output_format", "cuda", "-i", stream.path, "-vf", "hwdownload,format=nv12",
                     "-f", "rawvideo", output], output=output, **variables)


@pytest.mark.parametrize("variable,value,error", [
    ("SWIFTVT_CUDA_FAIL", "init", "CUDA_ERROR_NO_DEVICE"),
    ("SWIFTVT_CUDA_FAIL", "create-context", "CUDA_ERROR_OUT_OF_MEMORY"),
    ("SWIFTVT_CUDA_DEVICES", "0", "CUDA_ERROR_INVALID_DEVICE"),
])
def test_setup_failure_is_a_clean_error(cuda, small, variable, value, error):
    run = decode(cuda, small, **{variable: value})
    assert run.status not in (0, 124), f"{variable}={value}: ffmpeg exit {run.status}"
    assert error in run.log, run.log[-1500:]
    assert run.leaks == []


@pytest.mark.parametrize("variable,value,error", [
    ("SWIFTVT_CUDA_FAIL", "create-decoder", "CUDA_ERROR_NOT_SUPPORTED"),
    ("SWIFTVT_CUDA_OUT_OF_MEMORY_AT", "1", "CUDA_ERROR_OUT_OF_MEMORY"),
])
def test_decoder_creation_failure_is_reported(cuda, small, variable, value, error):
    run = decode(cuda, small, **{variable: value})
    assert run.status != 124
    assert error in run.log, run.log[-1500:]
    assert run.pictures == 0
    assert "hwaccel initialisation returned error" in run.log


def test_failed_decode_call_is_reported_and_decoding_goes_on(cuda, small):
    run = decode(cuda, small, SWIFTVT_CUDA_FAIL_DECODE="5:call")
    assert run.status != 124
    assert "CUDA_ERROR_UNKNOWN" in run.log, run.log[-1500:]
    assert run.lines("VALIDATION") == []
    assert run.pictures == small.frames - 1
    assert run.leaks == []


def test_failed_decode_status_gives_a_green_picture(cuda, small):
    run = decode(cuda, small, SWIFTVT_CUDA_FAIL_DECODE="5")
    assert run.status == 0, run.log[-1500:]
    assert run.lines("FAULT: cuvidDecodePicture 5")
    data = run.output.read_bytes()
    frame = small.width * small.height * 3 // 2
    # BA_MW_D.264 has no reordering: the fifth picture decoded is the fifth frame output.
    assert data[4 * frame:5 * frame] == bytes(frame)
    assert data[3 * frame:4 * frame] != bytes(frame)
    assert run.leaks == []


def test_device_lost_is_sticky_and_never_hangs(cuda, small):
    run = decode(cuda, small, SWIFTVT_CUDA_DEVICE_LOST=10)
    assert run.status != 124, "ffmpeg hung after the device was lost"
    assert run.lines("DEVICE-LOST")
    assert "719" in run.log or "CUDA_ERROR_LAUNCH_FAILED" in run.log, run.log[-1500:]
    assert run.pictures == 9
    assert run.leaks == []
