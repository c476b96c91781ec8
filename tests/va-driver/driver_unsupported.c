/* swiftvt_sw: the entry points with nothing behind them: subpictures and display attributes (none),
 * multi-frame encoding, processing rate and vaCopy (not implemented). */
#define _GNU_SOURCE

#include "driver_internal.h"

/* ---------- subpictures and display attributes: none ---------- */

VAStatus sw_QuerySubpictureFormats(VADriverContextP ctx, VAImageFormat *format_list, unsigned int *flags,
                                   unsigned int *num_formats)
{
    (void)ctx, (void)format_list, (void)flags;
    *num_formats = 0;
    return VA_STATUS_SUCCESS;
}

VAStatus sw_CreateSubpicture(VADriverContextP ctx, VAImageID image, VASubpictureID *subpicture)
{
    (void)ctx, (void)image, (void)subpicture;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_DestroySubpicture(VADriverContextP ctx, VASubpictureID subpicture)
{
    (void)ctx, (void)subpicture;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_SetSubpictureImage(VADriverContextP ctx, VASubpictureID subpicture, VAImageID image)
{
    (void)ctx, (void)subpicture, (void)image;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_SetSubpictureChromakey(VADriverContextP ctx, VASubpictureID subpicture, unsigned int chromakey_min,
                                   unsigned int chromakey_max, unsigned int chromakey_mask)
{
    (void)ctx, (void)subpicture, (void)chromakey_min, (void)chromakey_max, (void)chromakey_mask;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_SetSubpictureGlobalAlpha(VADriverContextP ctx, VASubpictureID subpicture, float global_alpha)
{
    (void)ctx, (void)subpicture, (void)global_alpha;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_AssociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture, VASurfaceID *target_surfaces,
                                int num_surfaces, short src_x, short src_y, unsigned short src_width,
                                unsigned short src_height, short dest_x, short dest_y,
                                unsigned short dest_width, unsigned short dest_height, unsigned int flags)
{
    (void)ctx, (void)subpicture, (void)target_surfaces, (void)num_surfaces, (void)src_x, (void)src_y;
    (void)src_width, (void)src_height, (void)dest_x, (void)dest_y, (void)dest_width, (void)dest_height, (void)flags;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_DeassociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture,
                                  VASurfaceID *target_surfaces, int num_surfaces)
{
    (void)ctx, (void)subpicture, (void)target_surfaces, (void)num_surfaces;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

VAStatus sw_QueryDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int *num_attributes)
{
    (void)ctx, (void)attr_list;
    *num_attributes = 0;
    return VA_STATUS_SUCCESS;
}

VAStatus sw_GetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes)
{
    (void)ctx, (void)attr_list;
    return num_attributes == 0 ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
}

VAStatus sw_SetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes)
{
    (void)ctx, (void)attr_list;
    return num_attributes == 0 ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
}

/* ---------- multi-frame encoding, processing rate, copy: not implemented ---------- */

VAStatus sw_CreateMFContext(VADriverContextP ctx, VAMFContextID *mfe_context)
{
    (void)ctx, (void)mfe_context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_MFAddContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context)
{
    (void)ctx, (void)mf_context, (void)context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_MFReleaseContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context)
{
    (void)ctx, (void)mf_context, (void)context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_MFSubmit(VADriverContextP ctx, VAMFContextID mf_context, VAContextID *contexts, int num_contexts)
{
    (void)ctx, (void)mf_context, (void)contexts, (void)num_contexts;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_QueryProcessingRate(VADriverContextP ctx, VAConfigID config_id, VAProcessingRateParameter *proc_buf,
                                unsigned int *processing_rate)
{
    (void)ctx, (void)config_id, (void)proc_buf, (void)processing_rate;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_Copy(VADriverContextP ctx, VACopyObject *dst, VACopyObject *src, VACopyOption option)
{
    (void)ctx, (void)dst, (void)src, (void)option;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}
