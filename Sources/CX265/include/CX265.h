// libx265 for SoftwareCodecs' HEVC encoder, plus stand-ins for what Swift cannot import (calls
// through x265_api's function pointers, fixed arrays, macros). Every helper is prefixed `cx265_`.
//
// Only x265_api_get is forwarded (loader.c): every other call goes through the x265_api table it
// returns for one bit depth. Debian's libx265.so.199 is multilib: the 8-bit library answers for
// bit depth 8 and reaches its 10- and 12-bit builds (linked in) for 10 and 12, so the table, not
// the plain x265_* exports (8-bit only), is what encodes 10-bit pictures.
#ifndef CX265_H
#define CX265_H

#include <stdint.h>
#include <stdio.h>
#include <x265.h>

/// Loads libx265 (see loader.c); NULL on success, else what went wrong. Must succeed before
/// cx265_api is called.
const char *cx265_load(void);

/// The programming interface of the loaded library for `bit_depth` (8, 10 or 12): NULL when the
/// library has no build for that depth, or when its x265_param/x265_picture differ in size from
/// the header's (a library built from another header).
const x265_api *cx265_api(int bit_depth);

static inline int cx265_build(void) { return X265_BUILD; }

static inline x265_param *cx265_param_alloc(const x265_api *api) { return api->param_alloc(); }
static inline void cx265_param_free(const x265_api *api, x265_param *param) { api->param_free(param); }
static inline int cx265_param_default_preset(const x265_api *api, x265_param *param, const char *preset,
                                             const char *tune) {
    return api->param_default_preset(param, preset, tune);
}
static inline int cx265_param_parse(const x265_api *api, x265_param *param, const char *name, const char *value) {
    return api->param_parse(param, name, value);
}
static inline int cx265_param_apply_profile(const x265_api *api, x265_param *param, const char *profile) {
    return api->param_apply_profile(param, profile);
}
static inline void cx265_picture_init(const x265_api *api, x265_param *param, x265_picture *picture) {
    api->picture_init(param, picture);
}
static inline x265_encoder *cx265_encoder_open(const x265_api *api, x265_param *param) {
    return api->encoder_open(param);
}
static inline void cx265_encoder_parameters(const x265_api *api, x265_encoder *encoder, x265_param *param) {
    api->encoder_parameters(encoder, param);
}
static inline int cx265_encoder_headers(const x265_api *api, x265_encoder *encoder, x265_nal **nals,
                                        uint32_t *count) {
    return api->encoder_headers(encoder, nals, count);
}
static inline int cx265_encoder_encode(const x265_api *api, x265_encoder *encoder, x265_nal **nals, uint32_t *count,
                                       x265_picture *input, x265_picture *output) {
    return api->encoder_encode(encoder, nals, count, input, output);
}
static inline void cx265_encoder_close(const x265_api *api, x265_encoder *encoder) { api->encoder_close(encoder); }

/// Points plane `index` of `picture` at caller memory (x265_picture.planes is a fixed array).
static inline void cx265_picture_set_plane(x265_picture *picture, int index, void *data, int stride) {
    if (index >= 0 && index < 3) {
        picture->planes[index] = data;
        picture->stride[index] = stride;
    }
}

static inline int cx265_csp_i420(void) { return X265_CSP_I420; }
static inline int cx265_csp_i422(void) { return X265_CSP_I422; }
static inline int cx265_csp_i444(void) { return X265_CSP_I444; }
static inline int cx265_type_auto(void) { return X265_TYPE_AUTO; }
static inline int cx265_type_idr(void) { return X265_TYPE_IDR; }
static inline int cx265_type_i(void) { return X265_TYPE_I; }
static inline int cx265_type_p(void) { return X265_TYPE_P; }

#endif
