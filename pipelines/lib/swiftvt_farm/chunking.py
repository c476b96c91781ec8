"""Where the input is cut: chunk boundaries at the source's key frames, moved onto scene cuts, from
the frame index (swiftvt_farm.frameindex). A boundary is a frame of the index, so every frame
belongs to exactly one chunk."""
import math

from .errors import JobError

# The one-host encode's GOP, `gop_seconds` below: vtmultipasssink, like swiftvt-farm encode without
# --max-keyframe-interval, starts an IDR picture at least that often (and at scene cuts); the value
# comes from the Swift code that applies it (`swiftvt-farm defaults`, worker.farm_tool_defaults).


def default_chunk_seconds(duration_s, workers, gop_seconds):
    """4 chunks per worker (workers = Dask threads), so that while the last chunks of a pass run the
    other workers wait for at most about a quarter of their share; but no more chunks than the GOPs
    of the one-host encode, ceil(duration / gop_seconds). Every chunk starts with an IDR picture:
    with that cap the farm codes no more of them than vtmultipasssink does on the same input, and
    boundaries snapped to scene cuts put them where it puts its own. A clip of one GOP is one chunk:
    splitting it adds an I picture the one-host encode does not have (the 300-frame 720p clip of
    bench/farm.sh at 1000 kbit/s in 2 chunks: 0.2 dB of PSNR-Y below vtmultipasssink's).

    The cap also keeps chunks at least 5 s long, which the rate control needs: a re-encoded chunk
    runs in its own session, whose in-pass feedback (the bits each frame took against the plan's
    prediction) acts only on frames chosen after the first ones come out of the encoder, about
    60 frames (2 s at 30/s) of x264 look-ahead and frame threads later. 240 frames of 320x240
    patterns at 300 kbit/s ended +7.05 % off the target after 3 passes in 4 chunks of 2 s, -0.97 %
    in 2 chunks of 4 s (vtmultipasssink, one session: -0.87 %).

    Where fewer chunks than 4 per worker are left, their count is rounded down to a multiple of the
    workers when above it, so that no worker is left with one more chunk than the others."""
    gops = max(1, math.ceil(duration_s / gop_seconds - 1e-6))
    count = min(4 * workers, gops)
    if count > workers:
        count -= count % workers
    return duration_s / count


def key_frame_boundaries(index, chunk_ns):
    """Chunk starts (indices into index.frames): the first frame, then for each multiple of
    chunk_ns after it the last key frame at or before it. Not within half a chunk of the end:
    duration / count * count can round to just below the duration and leave a last chunk of a few
    frames."""
    frames = index.frames
    keys = index.key_frames()
    starts = [0]
    candidate = index.start + chunk_ns
    while candidate < index.end - chunk_ns // 2:
        at_or_before = [k for k in keys if frames[k].time <= candidate]
        if at_or_before and at_or_before[-1] > starts[-1]:
            starts.append(at_or_before[-1])
        candidate += chunk_ns
    return starts


# A chunk boundary is an IDR picture the one-host encode may not have: vtmultipasssink puts its IDR
# pictures every 10 s and at scene cuts (x264's scenecut). A boundary moved onto a scene cut costs
# nothing, since the encoder starts a GOP there anyway. Searched within this fraction of a chunk on
# each side of a boundary; a cut is a frame whose 16-bin luma histogram (of a 64x36 picture) lies
# at least SCENE_CUT_DISTANCE (L1, 0...2) from the frame before's (moving pictures stay below 0.11 in the
# test clips; smpte bars to a zone plate is 0.48).
SCENE_CUT_SEARCH = 0.4
SCENE_CUT_DISTANCE = 0.3


def _luma_histogram(sample):
    """The normalised 16-bin histogram of a 64x36 GRAY8 picture (2,304 bytes, stride 64)."""
    data = sample.get_buffer().extract_dup(0, 64 * 36)
    bins = [0] * 16
    for value in data:
        bins[value >> 4] += 1
    return [count / len(data) for count in bins]


def _distance(a, b):
    return sum(abs(x - y) for x, y in zip(a, b))


def scene_cut_boundaries(Gst, path, index, starts, chunk_ns):
    """Moves each chunk boundary (not the first) onto a scene cut within SCENE_CUT_SEARCH of a chunk
    of it, where there is one. Cheap on long inputs: first the source's key frames in the window
    (one picture decoded each) show between which two the picture changes most; then only the
    frames between those two are decoded to find the frame. A boundary without a cut near it stays
    at its key frame. Chunks keep at least half a chunk. Decoded frames are matched to the index by
    PTS."""
    frames = index.frames
    by_pts = {frame.pts: i for i, frame in enumerate(frames)}
    pipeline = Gst.parse_launch(
        'filesrc name=src ! decodebin caps="video/x-raw(ANY)" expose-all-streams=false ! videoconvert '
        "! videoscale ! video/x-raw,format=GRAY8,width=64,height=36,pixel-aspect-ratio=1/1 ! "
        "appsink name=sink sync=false")
    pipeline.get_by_name("src").set_property("location", path)
    sink = pipeline.get_by_name("sink")

    def decode(first, last):
        """{frame index: histogram} of the frames first...last, decoded after one ACCURATE seek."""
        found = {}
        stop = frames[last + 1].stream_time if last + 1 < len(frames) else None
        if not pipeline.seek(1.0, Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE,
                             Gst.SeekType.SET, frames[first].seek_position,
                             Gst.SeekType.NONE if stop is None else Gst.SeekType.SET, -1 if stop is None else stop):
            return found
        pipeline.get_state(30 * Gst.SECOND)
        pipeline.set_state(Gst.State.PLAYING)
        while len(found) < last - first + 1:
            sample = sink.try_pull_sample(5 * Gst.SECOND)
            if sample is None:
                break
            i = by_pts.get(sample.get_buffer().pts)
            if i is not None and first <= i <= last:
                found[i] = _luma_histogram(sample)
        pipeline.set_state(Gst.State.PAUSED)
        pipeline.get_state(30 * Gst.SECOND)
        return found

    moved = list(starts)
    try:
        pipeline.set_state(Gst.State.PAUSED)
        if pipeline.get_state(30 * Gst.SECOND)[0] != Gst.StateChangeReturn.SUCCESS:
            return moved
        window = int(chunk_ns * SCENE_CUT_SEARCH)
        for i in range(1, len(moved)):
            boundary = frames[moved[i]].time
            low = max(frames[moved[i - 1]].time + chunk_ns // 2, boundary - window)
            high = min(boundary + window, (frames[moved[i + 1]].time if i + 1 < len(moved)
                                           else index.end) - chunk_ns // 2)
            if high <= low:
                continue
            keys = [k for k in index.key_frames() if low <= frames[k].time < high]
            pictures = [(k, decode(k, k).get(k)) for k in keys]
            pictures = [(k, histogram) for k, histogram in pictures if histogram is not None]
            if len(pictures) < 2:
                continue
            change, first, last = max((_distance(a[1], b[1]), a[0], b[0]) for a, b in zip(pictures, pictures[1:]))
            if change < SCENE_CUT_DISTANCE:
                continue
            between = sorted(decode(first, last).items())
            if len(between) < 2:
                continue
            distance, cut = max((_distance(a[1], b[1]), b[0]) for a, b in zip(between, between[1:]))
            if distance >= SCENE_CUT_DISTANCE and low <= frames[cut].time < high:
                moved[i] = cut
    finally:
        pipeline.set_state(Gst.State.NULL)
    if moved != sorted(set(moved)):
        raise JobError("the chunk boundaries came out of order (a scene cut before the boundary before it)")
    return moved


def make_chunks(index, starts):
    """The chunks the passes work on, from boundary frame indices: each with its frames ([pts,
    stream_time, time, duration, seek_position]), the stream times just outside it (for the seeks), and the label
    every message names it by, in the input's own time."""
    frames = index.frames
    chunks = []
    for i, first in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(frames)
        own = frames[first:end]
        start_s = own[0].time / 1e9
        stop_s = (own[-1].time + own[-1].duration) / 1e9
        chunks.append({
            "index": i,
            "frames": [[f.pts, f.stream_time, f.time, f.duration, f.seek_position] for f in own],
            "stream_time_after": frames[end].stream_time if end < len(frames) else None,
            "label": f"chunk {i} ({start_s:.3f} s – {stop_s:.3f} s)",
            "start_s": start_s, "stop_s": stop_s, "frame_count": len(own), "first_frame": first})
    return chunks


def extra_key_picture_cost(chunks, pass_one, duration_s, cut_at_scene, gop_seconds):
    """What chunks shorter than the one-host GOP cost, from pass 1: None when the farm starts no
    more IDR pictures than vtmultipasssink would (one per gop_seconds, and at scene cuts), else
    (extra IDR pictures, their share of pass 1's bits). An IDR picture's cost is what it took
    beyond an average frame of its chunk; every bit it takes, the target takes from the other
    frames. `pass_one`: {chunk index: encode result}; `cut_at_scene`: {chunk index} of chunks
    that start at a scene cut (where the one-host encode starts a GOP too)."""
    periodic = [c for c in chunks[1:] if c["index"] not in cut_at_scene]
    one_host_periodic = max(0, math.ceil(duration_s / gop_seconds - 1e-6) - 1)
    extra = len(periodic) - one_host_periodic
    if extra <= 0:
        return None
    excess = []
    for chunk in periodic:
        result = pass_one[chunk["index"]]
        first, frames = result.get("first_picture_bits", 0), result["frames"]
        average_other = (result["bits"] - first) / (frames - 1) if frames > 1 else first
        excess.append(max(0.0, first - average_other))
    # The extra ones are any `extra` of the periodic boundaries; their average stands for each.
    total = sum(r["bits"] for r in pass_one.values())
    share = extra * (sum(excess) / len(excess)) / total if total else 0.0
    return extra, share


def describe_chunks(index, chunks, chunk_seconds, asked, at_key_frames):
    """The chunks in words, as they came out: "5 chunks of 1.93-2.07 s", and when they are fewer
    than `chunk_seconds` (asked for with --chunk-seconds, else the default) would make, why: the
    input's key frames, where chunks must start, are farther apart. `at_key_frames`: the
    boundaries before scene cuts moved them."""
    lengths = [c["stop_s"] - c["start_s"] for c in chunks]
    shortest, longest = min(lengths), max(lengths)
    span = f"{shortest:.2f} s" if longest - shortest < 0.005 else f"{shortest:.2f}-{longest:.2f} s"
    text = f"{len(chunks)} chunk{'s' if len(chunks) != 1 else ''} of {span}"
    moved = sum(1 for c in chunks[1:] if c["first_frame"] not in at_key_frames)
    if moved:
        text += f", {moved} of {len(chunks) - 1} boundar{'y' if len(chunks) == 2 else 'ies'} moved onto a scene cut"
    wanted = max(1, round(index.duration / 1e9 / chunk_seconds))
    if len(chunks) < wanted:
        keys = [index.frames[k].time for k in index.key_frames()]
        gaps = [b - a for a, b in zip(keys, keys[1:])]
        if not gaps:
            reason = "the input has one key frame, at its start"
        else:
            low, high = min(gaps) / 1e9, max(gaps) / 1e9
            reason = (f"the input's key frames are {low:.2f} s apart" if high - low < 0.005
                      else f"the input's key frames are {low:.2f}-{high:.2f} s apart")
        text += f" ({'asked for' if asked else 'by default'} {chunk_seconds:.2f} s: {reason})"
    return text
