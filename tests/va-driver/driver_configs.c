/* swiftvt_sw: configs: the profiles and entrypoints offered, the config attributes of decoding and
 * encoding configs, vaCreateConfig / vaDestroyConfig / vaQueryConfigAttributes. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include <va/va_str.h>

#include "driver_internal.h"

static const VAProfile supported_profiles[NUM_PROFILES] = {
    VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High,
};

static int profile_supported(const struct sw_driver *drv, VAProfile profile)
{
    if (drv->no_h264)
        return 0;
    for (int i = 0; i < NUM_PROFILES; i++)
        if (supported_profiles[i] == profile)
            return 1;
    return 0;
}

VAStatus sw_QueryConfigProfiles(VADriverContextP ctx, VAProfile *profile_list, int *num_profiles)
{
    struct sw_driver *drv = DRIVER(ctx);
    *num_profiles = 0;
    if (drv->no_h264)
        return VA_STATUS_SUCCESS; /* SWIFTVT_VA_NO_H264: a device without H.264 */
    for (int i = 0; i < NUM_PROFILES; i++)
        profile_list[i] = supported_profiles[i];
    *num_profiles = NUM_PROFILES;
    return VA_STATUS_SUCCESS;
}

/* The encoding entrypoints: EncSlice, and EncSliceLP for a personality that offers it. */
int is_encoding(const struct sw_driver *drv, VAEntrypoint entrypoint)
{
    if (drv->personality.decode_only)
        return 0;
    return entrypoint == VAEntrypointEncSlice || (drv->personality.enc_slice_lp && entrypoint == VAEntrypointEncSliceLP);
}

/* The rate control modes an encoding entrypoint offers: iHD's EncSliceLP (VDEnc) is often CQP only. */
static uint32_t offered_rate_controls(const struct sw_driver *drv, VAEntrypoint entrypoint)
{
    if (entrypoint == VAEntrypointEncSliceLP)
        return drv->encode_rate_controls & VA_RC_CQP ? VA_RC_CQP : drv->encode_rate_controls;
    return drv->encode_rate_controls;
}

VAStatus sw_QueryConfigEntrypoints(VADriverContextP ctx, VAProfile profile, VAEntrypoint *entrypoint_list,
                                   int *num_entrypoints)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    int n = 0;
    entrypoint_list[n++] = VAEntrypointVLD;
    if (!drv->personality.decode_only)
        entrypoint_list[n++] = VAEntrypointEncSlice;
    if (drv->personality.enc_slice_lp)
        entrypoint_list[n++] = VAEntrypointEncSliceLP;
    *num_entrypoints = n;
    return VA_STATUS_SUCCESS;
}

static void fill_attribute(VAConfigAttrib *attrib)
{
    switch (attrib->type) {
    case VAConfigAttribRTFormat:
        attrib->value = VA_RT_FORMAT_YUV420;
        break;
    case VAConfigAttribDecSliceMode:
        attrib->value = VA_DEC_SLICE_MODE_NORMAL;
        break;
    case VAConfigAttribMaxPictureWidth:
    case VAConfigAttribMaxPictureHeight:
        attrib->value = MAX_SIZE;
        break;
    default:
        attrib->value = VA_ATTRIB_NOT_SUPPORTED;
        break;
    }
}

/* What an encoding config offers; a config's own choices replace RateControl and EncPackedHeaders
 * (config NULL: what vaGetConfigAttributes offers). */
static void fill_encode_attribute(const struct sw_driver *drv, VAEntrypoint entrypoint, const struct sw_config *config,
                                  VAConfigAttrib *attrib)
{
    switch (attrib->type) {
    case VAConfigAttribRTFormat:
        attrib->value = VA_RT_FORMAT_YUV420;
        break;
    case VAConfigAttribRateControl:
        attrib->value = config ? config->rate_control : offered_rate_controls(drv, entrypoint);
        break;
    case VAConfigAttribEncPackedHeaders:
        attrib->value = config ? config->packed_headers : drv->encode_packed_headers;
        break;
    case VAConfigAttribEncMaxRefFrames:
        attrib->value = ENCODE_MAX_REF_FRAMES;
        break;
    case VAConfigAttribEncMaxSlices:
        attrib->value = 1;
        break;
    case VAConfigAttribEncQualityRange:
        attrib->value = drv->personality.encode_quality_range ? (uint32_t)drv->personality.encode_quality_range
                                                              : ENCODE_QUALITY_LEVELS;
        break;
    case VAConfigAttribMaxPictureWidth:
    case VAConfigAttribMaxPictureHeight:
        attrib->value = MAX_SIZE;
        break;
    default:
        attrib->value = VA_ATTRIB_NOT_SUPPORTED;
        break;
    }
}

VAStatus sw_GetConfigAttributes(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                                VAConfigAttrib *attrib_list, int num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointVLD && !is_encoding(drv, entrypoint))
        return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    for (int i = 0; i < num_attribs; i++) {
        if (is_encoding(drv, entrypoint))
            fill_encode_attribute(drv, entrypoint, NULL, &attrib_list[i]);
        else
            fill_attribute(&attrib_list[i]);
    }
    return VA_STATUS_SUCCESS;
}

/* An encoding config's attributes: RTFormat must include YUV420, RateControl be exactly one of
 * the offered modes, EncPackedHeaders a subset of the offered ones (default: CQP if offered,
 * else the first mode offered; no packed headers). The read-only ones may be passed with the
 * value offered; anything else is not settable. */
static VAStatus encode_config_attributes(const struct sw_driver *drv, const VAConfigAttrib *attrib_list,
                                         int num_attribs, struct sw_config *config)
{
    uint32_t offered = offered_rate_controls(drv, config->entrypoint);
    config->rate_control = (offered & VA_RC_CQP) ? VA_RC_CQP : (offered & VA_RC_CBR) ? VA_RC_CBR : VA_RC_VBR;
    config->packed_headers = VA_ENC_PACKED_HEADER_NONE;
    for (int i = 0; i < num_attribs; i++) {
        const VAConfigAttrib *a = &attrib_list[i];
        VAConfigAttrib expected = { .type = a->type };
        switch (a->type) {
        case VAConfigAttribRTFormat:
            if (!(a->value & VA_RT_FORMAT_YUV420))
                return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
            break;
        case VAConfigAttribRateControl:
            /* One mode: a single bit among the offered ones. */
            if (a->value == 0 || (a->value & (a->value - 1)) || !(a->value & offered)) {
                fprintf(stderr, "swiftvt_sw: vaCreateConfig: RateControl %#x is not one of the offered modes %#x\n",
                        a->value, offered);
                return VA_STATUS_ERROR_INVALID_VALUE;
            }
            config->rate_control = a->value;
            break;
        case VAConfigAttribEncPackedHeaders:
            if (a->value & ~drv->encode_packed_headers) {
                fprintf(stderr, "swiftvt_sw: vaCreateConfig: EncPackedHeaders %#x is not a subset of %#x\n", a->value,
                        drv->encode_packed_headers);
                return VA_STATUS_ERROR_INVALID_VALUE;
            }
            config->packed_headers = a->value;
            break;
        case VAConfigAttribEncMaxRefFrames:
        case VAConfigAttribEncMaxSlices:
        case VAConfigAttribEncQualityRange:
        case VAConfigAttribMaxPictureWidth:
        case VAConfigAttribMaxPictureHeight:
            fill_encode_attribute(drv, config->entrypoint, NULL, &expected);
            if (a->value != expected.value)
                return VA_STATUS_ERROR_INVALID_VALUE;
            break;
        default:
            fprintf(stderr, "swiftvt_sw: vaCreateConfig: attribute %s (%d) is not supported for encoding\n",
                    vaConfigAttribTypeStr(a->type), a->type);
            return VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
        }
    }
    return VA_STATUS_SUCCESS;
}

VAStatus sw_CreateConfig(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                         VAConfigAttrib *attrib_list, int num_attribs, VAConfigID *config_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->faults & FAIL_CREATE_CONFIG) {
        drv_log(drv, "vaCreateConfig: injected failure (SWIFTVT_VA_FAIL=create-config)");
        return VA_STATUS_ERROR_OPERATION_FAILED;
    }
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointVLD && !is_encoding(drv, entrypoint))
        return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    struct sw_config chosen = { .profile = profile, .entrypoint = entrypoint };
    if (is_encoding(drv, entrypoint)) {
        VAStatus status = encode_config_attributes(drv, attrib_list, num_attribs, &chosen);
        if (status != VA_STATUS_SUCCESS)
            return status;
    } else {
        for (int i = 0; i < num_attribs; i++) {
            if (attrib_list[i].type == VAConfigAttribRTFormat && !(attrib_list[i].value & VA_RT_FORMAT_YUV420))
                return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
            if (attrib_list[i].type == VAConfigAttribDecSliceMode && attrib_list[i].value != VA_DEC_SLICE_MODE_NORMAL)
                return VA_STATUS_ERROR_INVALID_VALUE;
        }
    }
    struct sw_config *config = calloc(1, sizeof(*config));
    if (!config)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    *config = chosen;
    pthread_mutex_lock(&drv->lock);
    *config_id = table_add(&drv->configs, config);
    if (*config_id != VA_INVALID_ID && is_encoding(drv, entrypoint) && drv->paramlog) {
        fprintf(drv->paramlog, "encconfig profile=%s rc=%s packed=%#x\n", h264_encoder_profile_name(profile),
                h264_encoder_rc_name(config->rate_control), config->packed_headers);
        fflush(drv->paramlog);
    }
    pthread_mutex_unlock(&drv->lock);
    if (*config_id == VA_INVALID_ID) {
        free(config);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (is_encoding(drv, entrypoint))
        drv_log(drv, "vaCreateConfig: profile %d, %s, rate control %s, packed headers %#x -> config %#x", profile,
                vaEntrypointStr(entrypoint) + 12,
                h264_encoder_rc_name(config->rate_control), config->packed_headers, *config_id);
    else
        drv_log(drv, "vaCreateConfig: profile %d -> config %#x", profile, *config_id);
    return VA_STATUS_SUCCESS;
}

VAStatus sw_DestroyConfig(VADriverContextP ctx, VAConfigID config_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    struct sw_config *config = table_take(drv, &drv->configs, config_id);
    if (!config)
        return VA_STATUS_ERROR_INVALID_CONFIG;
    free(config);
    return VA_STATUS_SUCCESS;
}

VAStatus sw_QueryConfigAttributes(VADriverContextP ctx, VAConfigID config_id, VAProfile *profile,
                                  VAEntrypoint *entrypoint, VAConfigAttrib *attrib_list, int *num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_config *config = table_get(&drv->configs, config_id);
    VAStatus status = VA_STATUS_ERROR_INVALID_CONFIG;
    if (config) {
        *profile = config->profile;
        *entrypoint = config->entrypoint;
        if (is_encoding(drv, config->entrypoint)) {
            static const VAConfigAttribType types[NUM_ENCODE_CONFIG_ATTRIBUTES] = {
                VAConfigAttribRTFormat, VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders,
                VAConfigAttribEncMaxRefFrames, VAConfigAttribEncMaxSlices, VAConfigAttribEncQualityRange,
                VAConfigAttribMaxPictureWidth, VAConfigAttribMaxPictureHeight,
            };
            for (int i = 0; i < NUM_ENCODE_CONFIG_ATTRIBUTES; i++) {
                attrib_list[i].type = types[i];
                fill_encode_attribute(drv, config->entrypoint, config, &attrib_list[i]);
            }
            *num_attribs = NUM_ENCODE_CONFIG_ATTRIBUTES;
        } else {
            static const VAConfigAttribType types[NUM_CONFIG_ATTRIBUTES] = {
                VAConfigAttribRTFormat, VAConfigAttribDecSliceMode, VAConfigAttribMaxPictureWidth,
                VAConfigAttribMaxPictureHeight,
            };
            for (int i = 0; i < NUM_CONFIG_ATTRIBUTES; i++) {
                attrib_list[i].type = types[i];
                fill_attribute(&attrib_list[i]);
            }
            *num_attribs = NUM_CONFIG_ATTRIBUTES;
        }
        status = VA_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}
