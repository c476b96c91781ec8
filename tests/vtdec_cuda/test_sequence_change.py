"""A new coded video sequence inside one session (tests/lib/sequence_change_stream.py): the
previous sequence's last pictures, bumped at the new IDR picture, are read back before the
NVDEC accelerator changes its sequence (surfaces, crop, output pool), so all 20 pictures come out
as libavcodec decodes them, in one session on the device.

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_sequence_change.py
"""
from sequence_change_stream import check_pictures_of_the_previous_sequence_come_out_whole


def test_pictures_of_the_previous_sequence_come_out_whole(vtdec):
    check_pictures_of_the_previous_sequence_come_out_whole(vtdec, "vtdec-cuda", "NVDEC")
