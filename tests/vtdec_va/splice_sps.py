#!/usr/bin/env python3
"""Makes a stream whose SPS is re-sent mid-GOP with a different VUI: the NAL units of ORIGINAL,
with the SPS and PPS of MODIFIED (the same stream after h264_metadata rewrote its VUI, E.1.1)
inserted before the first slice of picture AT (which must be a non-IDR picture).

    splice_sps.py ORIGINAL.h264 MODIFIED.h264 OUTPUT.h264 AT

Prints the NAL unit type of the picture the SPS precedes."""
import sys


def nal_units(data):
    """(start, end) of each NAL unit's payload (after its start code), in order."""
    starts = []
    i = 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            break
        starts.append(i + 3)
        i += 3
    units = []
    for index, start in enumerate(starts):
        end = starts[index + 1] - 3 if index + 1 < len(starts) else len(data)
        while end > start and data[end - 1] == 0:  # trailing zero bytes / 4-byte start code
            end -= 1
        units.append((start, end))
    return units


def main(original_path, modified_path, output_path, at):
    original = open(original_path, "rb").read()
    modified = open(modified_path, "rb").read()
    parameter_sets = [modified[s:e] for s, e in nal_units(modified) if modified[s] & 0x1F in (7, 8)][:2]
    if len(parameter_sets) != 2 or parameter_sets == [original[s:e] for s, e in nal_units(original)
                                                      if original[s] & 0x1F in (7, 8)][:2]:
        sys.exit("splice_sps: MODIFIED must hold an SPS and PPS that differ from ORIGINAL's")
    output = bytearray()
    picture = -1
    spliced_type = None
    for start, end in nal_units(original):
        nal_type = original[start] & 0x1F
        # A first slice: first_mb_in_slice ue(v) 0 is the single bit 1 (7.3.3).
        if nal_type in (1, 5) and original[start + 1] & 0x80:
            picture += 1
            if picture == at:
                spliced_type = nal_type
                for unit in parameter_sets:
                    output += b"\x00\x00\x00\x01" + unit
        output += b"\x00\x00\x00\x01" + original[start:end]
    open(output_path, "wb").write(output)
    print(f"SPS with the new VUI before picture {at} (NAL unit type {spliced_type})")
    return 0 if spliced_type == 1 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
