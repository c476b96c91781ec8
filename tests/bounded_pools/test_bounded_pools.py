"""Bounded picture pools (issue 21, item 2): a decoder whose pictures pile up in an unbounded queue
before a slow sink must wait for the sink (back pressure), not allocate a picture per queued
frame. Measured as the peak RSS (GNU time's %M) of one gst-launch-1.0 process per run:

    multifilesrc location=VID_1920x1080 loop=true num-buffers=LOOPS ! h264parse ! DECODER
      ! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0
      ! identity sleep-time=25000 ! SINK

DECODER is `vtdec hardware=disable` or avdec_h264 (the peer); LOOPS is 2 and 4 (108 and 216
frames); SINK is
  - fdsink: no GstVideoMeta downstream, so vtdec copies into the base class's output pool (bounded
    by vtdec's decide_allocation); the output is cut into passes of the stream, each pass's MD5
    compared with MANIFEST.tsv's ref_md5;
  - fakevideosink: GstVideoMeta and min_buffers 2 downstream, so vtdec hands on the pictures of its
    own pool, libavcodec's get_buffer2 pool (bounded by the DPB, threads and min_buffers).
The sink renders at most 40 frames a second, slower than either decoder on two cores.

Each run is made once per session (`peaks`) and shared by the tests that read it; a test run
alone (-k) makes only the runs it needs.

    /usr/bin/python3 -m pytest -q tests/bounded_pools -k grow
"""
import hashlib
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import require

STREAM = "VID_1920x1080_cabac_temporal_direct.264"
VTDEC = "vtdec hardware=disable"
PEER = "avdec_h264"
SINKS = {"fdsink": "fdsink fd=1", "fakevideosink": "fakevideosink sync=false"}
# Ten 1080p pictures: more than this is growth with the stream's length.
MARGIN_KIB = 32 * 1024


def manifest_row(corpus, name):
    for line in (corpus / "h264" / "MANIFEST.tsv").read_text().splitlines():
        fields = line.split("\t")
        if fields[0] == name:
            return fields
    raise AssertionError(f"{name} is not in MANIFEST.tsv")


class Peaks:
    """The peak RSS (KiB) of each (decoder, loops, sink) run, made once; with fdsink, also the MD5
    of each whole pass of the stream in the output and the bytes after the last whole pass."""

    def __init__(self, env, stream, pass_bytes, work):
        self.env, self.stream, self.pass_bytes, self.work = env, stream, pass_bytes, Path(work)
        self.runs = {}

    def __call__(self, decoder, loops, sink):
        key = (decoder, loops, sink)
        if key not in self.runs:
            self.runs[key] = self._measure(decoder, loops, SINKS[sink])
        return self.runs[key]

    def _measure(self, decoder, loops, sink):
        rss_file = self.work / "rss"
        pipeline = (f"multifilesrc location={self.stream} loop=true num-buffers={loops} ! h264parse ! {decoder} "
                    f"! queue max-size-buffers=0 max-size-time=0 max-size-bytes=0 ! identity sleep-time=25000 ! {sink}")
        process = subprocess.Popen(["/usr/bin/time", "-o", str(rss_file), "-f", "%M", "gst-launch-1.0", "-q",
                                    *pipeline.split()], env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        digests, digest, filled = [], hashlib.md5(), 0
        while True:
            chunk = process.stdout.read(min(1 << 20, self.pass_bytes - filled))
            if not chunk:
                break
            digest.update(chunk)
            filled += len(chunk)
            if filled == self.pass_bytes:
                digests.append(digest.hexdigest())
                digest, filled = hashlib.md5(), 0
        stderr = process.stderr.read().decode(errors="replace")
        process.wait(timeout=300)
        rss = rss_file.read_text().split()[-1] if rss_file.exists() else ""
        assert process.returncode == 0 and rss.isdigit(), \
            f"{decoder}, {loops} loops into {sink} failed ({process.returncode}): {stderr[-2000:]}"
        return {"rss_kib": int(rss), "passes": digests, "rest": filled}


@pytest.fixture(scope="module")
def reference(corpus):
    stream = corpus / "h264" / STREAM
    require(stream.is_file(), f"bounded-pools: the test corpus {corpus} (set SWIFTVT_CORPUS to the corpus folder)")
    _, _, _, width, height, _, frames, ref_md5 = manifest_row(corpus, STREAM)[:8]
    return {"stream": stream, "frames": int(frames), "md5": ref_md5,
            "pass_bytes": int(width) * int(height) * 3 // 2 * int(frames)}


@pytest.fixture(scope="module")
def peaks(plugin_env, reference, tmp_path_factory):
    require(Path("/usr/bin/time").is_file(),
            "bounded-pools: GNU time (/usr/bin/time, Debian's package time), which reports the peak RSS")
    for element, what in ((PEER, "avdec_h264 (gstreamer1.0-libav), the peer decoder"),
                          ("fakevideosink", "fakevideosink (gstreamer1.0-plugins-bad)")):
        found = subprocess.run(["gst-inspect-1.0", element], env=plugin_env, capture_output=True).returncode == 0
        require(found, f"bounded-pools: {what}")
    return Peaks(plugin_env, reference["stream"], reference["pass_bytes"], tmp_path_factory.mktemp("bounded-pools"))


@pytest.mark.parametrize("loops", [2, 4])
def test_every_pass_has_the_reference_md5(peaks, reference, loops):
    """vtdec's fdsink output is `loops` whole passes of the stream, each with the reference MD5."""
    result = peaks(VTDEC, loops, "fdsink")
    assert result["passes"] == [reference["md5"]] * loops, f"passes' MD5s {result['passes']}"
    assert result["rest"] == 0, f"{result['rest']} bytes after the last whole pass"


@pytest.mark.parametrize("sink", SINKS)
def test_vtdec_peak_does_not_grow_with_the_stream(peaks, sink):
    short, long = peaks(VTDEC, 2, sink)["rss_kib"], peaks(VTDEC, 4, sink)["rss_kib"]
    print(f"{sink}: vtdec's peak RSS {short // 1024} MiB at 2 loops, {long // 1024} MiB at 4")
    assert short > 0
    assert long <= short + MARGIN_KIB, \
        (f"{sink}: vtdec's peak RSS grows with the stream: {short // 1024} MiB at 2 loops, {long // 1024} MiB at 4 "
         "(allowed: +32 MiB)")


@pytest.mark.parametrize("loops", [2, 4])
@pytest.mark.parametrize("sink", SINKS)
def test_vtdec_peak_at_most_avdec_h264s(peaks, sink, loops):
    ours, theirs = peaks(VTDEC, loops, sink)["rss_kib"], peaks(PEER, loops, sink)["rss_kib"]
    print(f"{sink}, {loops} loops: peak RSS vtdec {ours // 1024} MiB, avdec_h264 {theirs // 1024} MiB")
    assert ours > 0 and theirs > 0
    assert ours <= theirs + MARGIN_KIB, \
        f"{sink}, {loops} loops: vtdec {ours // 1024} MiB against avdec_h264's {theirs // 1024} MiB (allowed: +32 MiB)"
