"""hardware=disable never opens a VA display: software, exact, and libva never loads the driver
(its log, SWIFTVT_VA_LOG=1, stays silent).

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_disable.py
"""


def test_disable_never_opens_a_va_display(vtdec, small):
    result = vtdec.decode(small.path, "disable", SWIFTVT_VA_LOG=1)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == small.ref_md5
    assert "swiftvt_sw" not in result.log and "libva" not in result.log
    assert (result.backend or "").startswith("libavcodec (software)"), result.backend
