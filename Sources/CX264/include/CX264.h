// libx264 for SoftwareCodecs' encoder, plus stand-ins for what Swift cannot import (fixed
// arrays, macros). Every helper is prefixed `cx264_`.
#ifndef CX264_H
#define CX264_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <x264.h>

/// Loads libx264 (see loader.c); NULL on success, else what went wrong. Must succeed before any
/// other x264 function is called.
const char *cx264_load(void);

/// x264_encoder_open is a macro naming the build-specific symbol (x264_encoder_open_164).
static inline x264_t *cx264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }

/// Points plane `index` of `picture` at caller memory (x264_image_t.plane is a fixed array).
static inline void cx264_picture_set_plane(x264_picture_t *picture, int index, uint8_t *data, int stride) {
    if (index >= 0 && index < 4) {
        picture->img.plane[index] = data;
        picture->img.i_stride[index] = stride;
    }
}

/// Gives `picture` one SEI message to write in its access unit (x264_picture_t.extra_sei): x264
/// keeps the picture (and so the message) through look-ahead and reordering, and frees each
/// payload and the payload array with sei_free once written, so both are malloc'd copies here.
/// 0 on success, -1 when memory ran out (the picture then carries no message).
static inline int cx264_picture_add_sei(x264_picture_t *picture, int payload_type, const uint8_t *bytes, int size) {
    if (size <= 0 || picture->extra_sei.num_payloads < 0) return -1;
    uint8_t *copy = malloc((size_t)size);
    int count = picture->extra_sei.num_payloads;
    x264_sei_payload_t *payloads = realloc(picture->extra_sei.payloads, sizeof(*payloads) * (size_t)(count + 1));
    if (!copy || !payloads) {
        free(copy);
        if (payloads) picture->extra_sei.payloads = payloads;
        return -1;
    }
    memcpy(copy, bytes, (size_t)size);
    payloads[count].payload_size = size;
    payloads[count].payload_type = payload_type;
    payloads[count].payload = copy;
    picture->extra_sei.payloads = payloads;
    picture->extra_sei.num_payloads = count + 1;
    picture->extra_sei.sei_free = free;
    return 0;
}

/// Lets x264 measure per-frame PSNR without its info lines on stderr: x264 measures PSNR only
/// at log level info or above (validate_parameters turns b_psnr off below), so the level is
/// raised and this logger prints only errors, as x264's own does at the error level the backend
/// sets otherwise (loader.c).
void cx264_set_quiet_info_logging(x264_param_t *param);

static inline int cx264_build(void) { return X264_BUILD; }
static inline int cx264_csp_i420(void) { return X264_CSP_I420; }
static inline int cx264_csp_nv12(void) { return X264_CSP_NV12; }
static inline int cx264_csp_i422(void) { return X264_CSP_I422; }
static inline int cx264_csp_i444(void) { return X264_CSP_I444; }
static inline int cx264_csp_high_depth(void) { return X264_CSP_HIGH_DEPTH; }

#endif
