#!/usr/bin/env python3
"""Makes an H.264 stream with frame_num gaps (H.264 8.2.5.2) from a Baseline stream of x264's.

    frame_num_gap_stream.py INPUT.264 OUTPUT.264

INPUT: Annex B, Baseline (CAVLC), one slice per picture, pic_order_cnt_type 2, max_num_ref_frames
4, no B pictures (x264 with bframes=0 ref=4 writes that). OUTPUT: the same pictures with
gaps_in_frame_num_value_allowed_flag set in the SPS (the flag is one bit: set in place), followed
by two P pictures written here whose frame_num jumps past the last picture's (K). Every
macroblock of both is P_L0_16x16 with motion vector 0 and no residual, predicted from one
fixed index of the default list (8.2.4.2.1: descending PicNum, the inferred frames included; the
sliding window of 8.2.5.3 keeps 4 frames):

    A, a reference: frame_num K+3, frames K+1, K+2 inferred; RefPicList0 [K+2, K+1, K, K-1];
       ref_idx 2 -> frame K. Stored with the sliding window: [A, K+2, K+1, K]
    B, not a reference: frame_num K+5, frame K+4 inferred; RefPicList0 [K+4, A, K+2, K+1];
       ref_idx 1 -> A, itself a copy of K

(B follows a reference picture: which PrevRefFrameNum a gap after a non-reference picture that
itself followed a gap has is read differently by decoders, 7.4.3, so the stream avoids it.)

so each is an exact copy of a real decoded frame only when the decoder keeps the inferred frames in
its DPB and its lists: a decoder (or a VA device building its lists from ReferenceFrames) that left
them out predicts from another frame. No picture predicts from an inferred frame (their content is
undefined), so the result is exact against any conforming decoder (avdec_h264).
"""
import sys


def split_nal_units(data):
    """Annex B byte stream -> NAL units (without start codes)."""
    units, i, n = [], 0, len(data)
    starts = []
    while i + 3 <= n:
        if data[i] == 0 and data[i + 1] == 0 and data[i + 2] == 1:
            starts.append(i + 3)
            i += 3
        else:
            i += 1
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else n
        unit = data[s:end]
        while unit.endswith(b"\x00"):  # trailing_zero_8bits and the leading zero of a 4-byte start code
            unit = unit[:-1]
        units.append(unit)
    return units


def rbsp_from_ebsp(payload):
    """7.4.1: drops emulation_prevention_three_byte."""
    out, zeros = bytearray(), 0
    for b in payload:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def ebsp_from_rbsp(rbsp):
    """7.4.1: inserts emulation_prevention_three_byte before 00 00 0x (x <= 3)."""
    out, zeros = bytearray(), 0
    for b in rbsp:
        if zeros >= 2 and b <= 3:
            out.append(3)
            zeros = 0
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


class BitReader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def u(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | ((self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def ue(self):
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self):
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)


class BitWriter:
    def __init__(self):
        self.bits = []

    def u(self, n, v):
        self.bits += [(v >> (n - 1 - i)) & 1 for i in range(n)]

    def ue(self, v):
        length = (v + 1).bit_length()
        self.u(length - 1, 0)
        self.u(length, v + 1)

    def se(self, v):
        self.ue(2 * v - 1 if v > 0 else -2 * v)

    def rbsp_with_trailing_bits(self):
        bits = self.bits + [1]  # rbsp_stop_one_bit, then alignment zeros (7.3.2.11)
        bits += [0] * (-len(bits) % 8)
        return bytes(int("".join(map(str, bits[i:i + 8])), 2) for i in range(0, len(bits), 8))


def fail(message):
    sys.exit(f"frame_num_gap_stream: {message}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    units = split_nal_units(open(sys.argv[1], "rb").read())
    sps = pps = None
    out_units, last_frame_num = [], None
    for unit in units:
        nal_type = unit[0] & 0x1F
        if nal_type == 7:
            rbsp = bytearray(rbsp_from_ebsp(unit[1:]))
            r = BitReader(rbsp)
            profile_idc = r.u(8)
            r.u(16)  # constraint flags, level_idc
            r.ue()  # seq_parameter_set_id
            if profile_idc != 66:
                fail(f"profile_idc {profile_idc}: this needs a Baseline SPS (no chroma_format_idc etc.)")
            log2_max_frame_num = r.ue() + 4
            if r.ue() != 2:
                fail("pic_order_cnt_type is not 2 (x264 writes 2 without B pictures)")
            max_num_ref_frames = r.ue()
            if max_num_ref_frames < 4:
                fail(f"max_num_ref_frames {max_num_ref_frames}: the gaps need 4 (x264 ref=4)")
            rbsp[r.pos >> 3] |= 0x80 >> (r.pos & 7)  # gaps_in_frame_num_value_allowed_flag = 1
            r.u(1)
            mbs = (r.ue() + 1) * (r.ue() + 1)
            if r.u(1) != 1:
                fail("frame_mbs_only_flag is 0")
            sps = {"log2_max_frame_num": log2_max_frame_num, "mbs": mbs}
            unit = unit[:1] + ebsp_from_rbsp(bytes(rbsp))
        elif nal_type == 8:
            r = BitReader(rbsp_from_ebsp(unit[1:]))
            pps_id = r.ue()
            r.ue()
            if r.u(1):
                fail("the PPS has CABAC: this writes CAVLC slice data")
            r.u(1)
            if r.ue() != 0:
                fail("slice groups")
            r.ue(), r.ue()
            if r.u(1):
                fail("weighted prediction")
            r.u(2), r.se(), r.se(), r.se()
            deblocking_control = r.u(1)
            r.u(1)
            redundant_pic_cnt = r.u(1)
            pps = {"id": pps_id, "deblocking_control": deblocking_control, "redundant_pic_cnt": redundant_pic_cnt}
        elif nal_type in (1, 5):
            if sps is None:
                fail("a slice before the SPS")
            r = BitReader(rbsp_from_ebsp(unit[1:5 + sps["log2_max_frame_num"]]))
            if r.ue() != 0:
                fail("more than one slice per picture")
            r.ue(), r.ue()
            last_frame_num = r.u(sps["log2_max_frame_num"])
        out_units.append(unit)
    if sps is None or pps is None or last_frame_num is None:
        fail("no SPS, PPS or slice in the input")

    max_frame_num = 1 << sps["log2_max_frame_num"]

    def crafted_picture(frame_num, ref_idx, reference):
        w = BitWriter()
        w.ue(0)  # first_mb_in_slice
        w.ue(5)  # slice_type: P, every slice of the picture
        w.ue(pps["id"])
        w.u(sps["log2_max_frame_num"], frame_num % max_frame_num)
        if pps["redundant_pic_cnt"]:
            w.ue(0)
        w.u(1, 1)  # num_ref_idx_active_override_flag
        w.ue(3)  # num_ref_idx_l0_active_minus1: four entries
        w.u(1, 0)  # ref_pic_list_modification_flag_l0: the default list
        if reference:
            w.u(1, 0)  # adaptive_ref_pic_marking_mode_flag: the sliding window (8.2.5.3)
        w.se(0)  # slice_qp_delta
        if pps["deblocking_control"]:
            w.ue(1)  # disable_deblocking_filter_idc: off (no residual, equal motion: bS 0 anyway)
        for _ in range(sps["mbs"]):
            w.ue(0)  # mb_skip_run
            w.ue(0)  # mb_type P_L0_16x16 (Table 7-13)
            w.ue(ref_idx)  # ref_idx_l0: te(v) with cMax 3 is ue(v) (9.1.2)
            w.se(0)
            w.se(0)  # mvd_l0: the prediction is 0 (every neighbour has motion 0)
            w.ue(0)  # coded_block_pattern me(v): codeNum 0 is Inter 0 (Table 9-4)
        nal_header = 0x21 if reference else 0x01  # nal_ref_idc 1 or 0, nal_unit_type 1
        return bytes([nal_header]) + ebsp_from_rbsp(w.rbsp_with_trailing_bits())

    out_units.append(crafted_picture(last_frame_num + 3, ref_idx=2, reference=True))  # A
    out_units.append(crafted_picture(last_frame_num + 5, ref_idx=1, reference=False))  # B
    with open(sys.argv[2], "wb") as out:
        for unit in out_units:
            out.write(b"\x00\x00\x00\x01" + unit)


def make_frame_num_gap_stream(work, env, suite):
    """The test stream of the vtdec suites: x264's 10 Baseline pictures at 128x96 (ref=4, no B
    frames), then made into the gap stream above; `suite` names the suite in a skip message."""
    from swiftvt_testing import SYSTEM_PYTHON, require, run
    from va_testing import ffmpeg_has_libx264
    require(ffmpeg_has_libx264(env), f"{suite}: frame_num gap case: this ffmpeg has no libx264 encoder "
            "(Debian's ffmpeg has it)")
    base, gap = work / "gap-base.264", work / "frame-num-gap.264"
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=128x96:rate=25", "-frames:v",
         "10", "-c:v", "libx264", "-profile:v", "baseline", "-x264-params", "ref=4:bframes=0:keyint=300", "-f", "h264",
         base], env)
    run([SYSTEM_PYTHON, __file__, base, gap], env)
    return gap


if __name__ == "__main__":
    main()
