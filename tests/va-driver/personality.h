/* Driver personalities (SWIFTVT_VA_PERSONALITY=ihd|mesa|nvdec): the software VA driver behaves
 * the way a real driver does where clients are known to go wrong, so that a client is tested
 * against each of them without the hardware. README.md "Driver personalities" has the table and
 * the source of each behaviour. Unset: the driver's own behaviour, unchanged. */
#ifndef SWIFTVT_SW_PERSONALITY_H
#define SWIFTVT_SW_PERSONALITY_H

#include <stddef.h>

#include "encode.h"

enum va_personality { PERSONALITY_NONE, PERSONALITY_IHD, PERSONALITY_MESA, PERSONALITY_NVDEC };

struct personality_traits {
    enum va_personality which;
    const char *name;                /* "ihd", "mesa", "nvdec"; "none" */
    const char *vendor;              /* vaQueryVendorString; NULL: the driver's own */
    long latency_ms;                 /* asynchronous completion after this long (SWIFTVT_VA_LATENCY_MS) */
    int coded_map_early;             /* vaMapBuffer of a coded buffer does not wait (size 0 until done) */
    int query_status_unimplemented;  /* vaQuerySurfaceStatus returns VA_STATUS_ERROR_UNIMPLEMENTED */
    int query_error_unimplemented;   /* vaQuerySurfaceError returns VA_STATUS_ERROR_UNIMPLEMENTED */
    int derive_refused;              /* vaDeriveImage returns VA_STATUS_ERROR_OPERATION_FAILED */
    long derive_ns_per_byte;         /* mapping a derived image costs this much per byte (SWIFTVT_VA_DERIVE_NS_PER_BYTE) */
    int keep_abandoned_slices;       /* vaBeginPicture after a picture without vaEndPicture keeps its slices */
    int surface_cap;                 /* distinct render targets per decoding context; 0: no cap */
    int decode_only;                 /* no encoding entrypoint */
    int gap_frames_required;         /* frame_num gap frames must be real surfaces in ReferenceFrames */
    int enc_slice_lp;                /* EncSliceLP offered too, CQP only */
    int zero_based_ids;              /* surface, buffer and image IDs count from 0 */
    int encode_quality_range;        /* VAConfigAttribEncQualityRange; 0: the driver's own */
    struct enc_quirks enc;
};

/* The traits of SWIFTVT_VA_PERSONALITY's value (NULL or empty: none). Returns 0, or -1 for an
 * unknown name (the traits are then none). */
int personality_lookup(const char *value, struct personality_traits *out);

#endif
