"""The edit lists of an MP4 or QuickTime file that mp4mux/qtmux wrote, set after the fact from what
the job knows of each track's timing (ISO/IEC 14496-12 8.6.5-8.6.6: edts/elst).

Why: mp4mux cannot keep a copied track's own edit. An AAC track's first packet (the encoder's
priming, 1024 samples) lies before the demuxer's segment, which mp4mux clips (it drops buffers
outside the segment and reads no GstAudioClippingMeta, GStreamer 1.22); the job hands it every
packet on a timeline with room before zero instead, and then says here which part of each track
is presented: an empty edit for a track that starts after the earliest one, and a media edit that
skips the priming (media_time) and lasts as long as the input presented it.

Only the moov box changes; mp4mux writes it after the media (moov at the end, no fast start), so
it can grow without moving a byte of media (the chunk offsets stay right).
"""
import dataclasses
import struct

from .errors import JobError

NS = 1_000_000_000


@dataclasses.dataclass
class TrackTiming:
    """One track as it went into the muxer, in nanoseconds of the muxer's running time."""
    handler: str         # the trak's hdlr handler type the muxer writes for it: "vide", "soun"
    first_decode: int    # the first sample's decode time: media time 0 of the track
    start: int           # where its presentation starts (the video's first frame, the audio's segment start)
    end: int = None      # where it ends; None: at the end of its media


@dataclasses.dataclass
class Track:
    handler: str
    media_timescale: int
    media_duration: int           # mdhd, in media_timescale units
    edits: list                   # [(duration in movie timescale, media_time in media timescale or -1)]


def _boxes(data, start, end):
    """(type, box start, payload start, box end) of the boxes in data[start:end]."""
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        header = 8
        if size == 1:
            size, = struct.unpack(">Q", data[position + 8:position + 16])
            header = 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            raise JobError(f"the output's {kind.decode('latin-1')} box at byte {position} is cut short")
        yield kind.decode("latin-1"), position, position + header, position + size
        position += size


def _child(data, payload, end, kind):
    for child_kind, start, child_payload, child_end in _boxes(data, payload, end):
        if child_kind == kind:
            return start, child_payload, child_end
    return None


def _timescale_and_duration(data, payload):
    """mvhd's or mdhd's timescale and duration (version 0 or 1)."""
    if data[payload] == 1:
        return struct.unpack(">IQ", data[payload + 20:payload + 32])
    return struct.unpack(">II", data[payload + 12:payload + 20])


def _elst_entries(data, payload):
    version, count = data[payload], struct.unpack(">I", data[payload + 4:payload + 8])[0]
    entries, position = [], payload + 8
    for _ in range(count):
        if version == 1:
            duration, media_time = struct.unpack(">Qq", data[position:position + 16])
            position += 20
        else:
            duration, media_time = struct.unpack(">Ii", data[position:position + 8])
            position += 12
        entries.append((duration, media_time))
    return entries


def _moov(data):
    top = list(_boxes(data, 0, len(data)))
    moovs = [box for box in top if box[0] == "moov"]
    if len(moovs) != 1:
        raise JobError(f"the output holds {len(moovs)} moov boxes, not one")
    return moovs[0], top


def read(path):
    """(movie timescale, [Track] in the moov's order)."""
    with open(path, "rb") as f:
        return _tracks(f.read())


def _tracks(data):
    (_, _, payload, end), _ = _moov(data)
    mvhd = _child(data, payload, end, "mvhd")
    movie_timescale, _ = _timescale_and_duration(data, mvhd[1])
    tracks = []
    for kind, _, trak_payload, trak_end in _boxes(data, payload, end):
        if kind != "trak":
            continue
        mdia = _child(data, trak_payload, trak_end, "mdia")
        mdhd = _child(data, mdia[1], mdia[2], "mdhd")
        hdlr = _child(data, mdia[1], mdia[2], "hdlr")
        timescale, duration = _timescale_and_duration(data, mdhd[1])
        edits = []
        edts = _child(data, trak_payload, trak_end, "edts")
        if edts:
            elst = _child(data, edts[1], edts[2], "elst")
            edits = _elst_entries(data, elst[1]) if elst else []
        handler = data[hdlr[1] + 8:hdlr[1] + 12].decode("latin-1")
        tracks.append(Track(handler, timescale, duration, edits))
    return movie_timescale, tracks


def _complete_last_samples(data):
    """Gives a track's last sample the duration of the one before when the muxer wrote 0 (in
    place: the same sizes). A Matroska block has no duration, and mp4mux takes each sample's
    duration from the next one's time stamp: the last gets none, lies at the very end of the
    media, outside any edit, and a player drops it (FFmpeg does): a copied packet lost."""
    (_, _, payload, end), _ = _moov(data)
    for kind, _, trak_payload, trak_end in _boxes(data, payload, end):
        if kind != "trak":
            continue
        mdia = _child(data, trak_payload, trak_end, "mdia")
        mdhd = _child(data, mdia[1], mdia[2], "mdhd")
        minf = _child(data, mdia[1], mdia[2], "minf")
        stbl = _child(data, minf[1], minf[2], "stbl") if minf else None
        stts = _child(data, stbl[1], stbl[2], "stts") if stbl else None
        if not stts:
            continue
        count = struct.unpack(">I", data[stts[1] + 4:stts[1] + 8])[0]
        entries = [struct.unpack(">II", data[stts[1] + 8 + 8 * i:stts[1] + 16 + 8 * i]) for i in range(count)]
        if count < 2 or entries[-1] != (1, 0):
            continue
        delta = entries[-2][1]
        struct.pack_into(">I", data, stts[1] + 8 + 8 * (count - 1) + 4, delta)
        if data[mdhd[1]] == 1:
            struct.pack_into(">Q", data, mdhd[1] + 24, struct.unpack(">Q", data[mdhd[1] + 24:mdhd[1] + 32])[0] + delta)
        else:
            struct.pack_into(">I", data, mdhd[1] + 16, struct.unpack(">I", data[mdhd[1] + 16:mdhd[1] + 20])[0] + delta)


def edit_lists(movie_timescale, tracks, timings):
    """[[(duration, media_time)]] per track: the presentation starts at the earliest track's
    start; a later track waits in an empty edit (media_time -1), then plays from its start."""
    movie_start = min(timing.start for timing in timings)
    lists = []
    for track, timing in zip(tracks, timings):
        media_end = timing.first_decode + track.media_duration * NS // track.media_timescale
        end = media_end if timing.end is None else timing.end
        if end <= timing.start:
            raise JobError(f"the output's {track.handler} track would present nothing "
                           f"({timing.start / 1e9:.6f} s to {end / 1e9:.6f} s)")
        edits = []
        empty = round((timing.start - movie_start) * movie_timescale / NS)
        if empty > 0:
            edits.append((empty, -1))
        edits.append((round((end - timing.start) * movie_timescale / NS),
                      round((timing.start - timing.first_decode) * track.media_timescale / NS)))
        lists.append(edits)
    return lists


def _box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode("latin-1")) + payload


def _edts(edits):
    wide = any(duration > 0xFFFFFFFF or not -0x80000000 <= media_time < 0x80000000 for duration, media_time in edits)
    entries = b"".join(struct.pack(">Qqhh" if wide else ">Iihh", duration, media_time, 1, 0)
                       for duration, media_time in edits)  # media_rate 1.0 as 16.16
    return _box("edts", _box("elst", bytes([1 if wide else 0, 0, 0, 0]) + struct.pack(">I", len(edits)) + entries))


def _with_duration(data, payload, end, kind, duration, offset_v0, offset_v1):
    """The box (mvhd or tkhd) with its duration field set (version 0: 32 bits; 1: 64 bits)."""
    body = bytearray(data[payload:end])  # a copy: the duration is set in the box written, not in data
    if body[0] == 1:
        struct.pack_into(">Q", body, offset_v1, duration)
    elif duration <= 0xFFFFFFFF:
        struct.pack_into(">I", body, offset_v0, duration)
    else:
        raise JobError(f"the output's {kind} duration {duration} does not fit its version-0 box")
    return _box(kind, bytes(body))


def rewrite(path, timings):
    """Sets every track's edit list from `timings` (one per trak, in the moov's order, each
    naming the handler it expects), and the track and movie durations that follow from them.
    Returns the edit lists written."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    _complete_last_samples(data)
    movie_timescale, tracks = _tracks(data)
    if [track.handler for track in tracks] != [timing.handler for timing in timings]:
        raise JobError(f"the output's tracks are {[t.handler for t in tracks]}, the job muxed "
                       f"{[t.handler for t in timings]}")
    lists = edit_lists(movie_timescale, tracks, timings)
    (_, moov_start, payload, end), top = _moov(data)
    after = [box for box in top if box[1] > moov_start]
    if any(kind in ("mdat", "moof") for kind, *_ in after):
        raise JobError("the output's media follows its moov box, so its edit lists cannot be rewritten in place")
    track_durations = [sum(duration for duration, _ in edits) for edits in lists]
    children, track_number = [], 0
    for kind, start, child_payload, child_end in _boxes(data, payload, end):
        if kind == "mvhd":
            # mvhd: version/flags 4, two times of 4 or 8 bytes each, timescale 4, then the duration.
            children.append(_with_duration(data, child_payload, child_end, kind, max(track_durations), 16, 24))
        elif kind == "trak":
            parts = []
            for trak_kind, trak_start, trak_payload, trak_end in _boxes(data, child_payload, child_end):
                if trak_kind == "edts":
                    continue
                if trak_kind == "tkhd":
                    # tkhd: version/flags 4, two times of 4 or 8 bytes each, track_ID 4, reserved 4, then the duration.
                    parts.append(_with_duration(data, trak_payload, trak_end, trak_kind,
                                                track_durations[track_number], 20, 28))
                    parts.append(_edts(lists[track_number]))
                else:
                    parts.append(bytes(data[trak_start:trak_end]))
            children.append(_box("trak", b"".join(parts)))
            track_number += 1
        else:
            children.append(bytes(data[start:child_end]))
    # The boxes after the moov (qtmux's XMP uuid box) hold no offsets into the file: they move
    # with it as they are.
    moov = _box("moov", b"".join(children)) + bytes(data[end:])
    with open(path, "r+b") as f:
        f.seek(moov_start)
        f.write(moov)
        f.truncate()
    return lists
