/* The personalities' traits (personality.h). Each line says which driver behaves so; README.md
 * "Driver personalities" cites the source for each. */
#include "personality.h"

#include <string.h>

/* A hardware decode or encode takes a few milliseconds: long enough that a client which reads a
 * result without waiting for it sees the difference every time. */
#define HARDWARE_LATENCY_MS 3

int personality_lookup(const char *value, struct personality_traits *out)
{
    memset(out, 0, sizeof(*out));
    out->which = PERSONALITY_NONE;
    out->name = "none";
    if (!value || !*value)
        return 0;
    if (!strcmp(value, "ihd")) {
        /* intel/media-driver */
        out->which = PERSONALITY_IHD;
        out->name = "ihd";
        out->vendor = "Intel iHD driver for Intel(R) Gen Graphics - 23.1.1 (SwiftVT software VA driver, personality ihd)";
        out->latency_ms = HARDWARE_LATENCY_MS;
        out->derive_ns_per_byte = 20;  /* uncached, tiled memory: ~50 MB/s for the CPU */
        out->enc_slice_lp = 1;
        out->zero_based_ids = 1;
        out->enc.cabac = ENC_CABAC_REFUSED_AT_END;
        return 0;
    }
    if (!strcmp(value, "mesa")) {
        /* Mesa's gallium VA frontend (radeonsi) */
        out->which = PERSONALITY_MESA;
        out->name = "mesa";
        out->vendor = "Mesa Gallium driver 23.0.4 for SwiftVT software VA driver (personality mesa)";
        out->latency_ms = HARDWARE_LATENCY_MS;
        out->coded_map_early = 1;
        out->gap_frames_required = 1;
        out->encode_quality_range = 32;
        out->enc.qp_from_pic_init_only = 1;
        out->enc.cabac = ENC_CABAC_IGNORED;
        out->enc.sps_without_vui = 1;
        out->enc.quality_bitfield = 1;
        return 0;
    }
    if (!strcmp(value, "nvdec")) {
        /* elFarto/nvidia-vaapi-driver (NVDEC) */
        out->which = PERSONALITY_NVDEC;
        out->name = "nvdec";
        out->vendor = "VA-API NVDEC driver [direct backend] (SwiftVT software VA driver, personality nvdec)";
        out->latency_ms = HARDWARE_LATENCY_MS;
        out->query_status_unimplemented = 1;
        out->query_error_unimplemented = 1;
        out->derive_refused = 1;
        out->keep_abandoned_slices = 1;
        out->surface_cap = 32;
        out->decode_only = 1;
        out->gap_frames_required = 1;
        return 0;
    }
    out->name = "none";
    return -1;
}
