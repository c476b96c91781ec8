/* swiftvt_cuda: one NVDEC H.264 picture (CUVIDPICPARAMS + CUVIDH264PICPARAMS) decoded by the
 * software VA driver's engine (tests/va-driver/: slice header parsing, SPS/PPS rebuilt from VA
 * picture parameters, libavcodec on one thread). */
#ifndef SWIFTVT_CUDA_H264_CUVID_H
#define SWIFTVT_CUDA_H264_CUVID_H

#include <stdint.h>

#include "../va-driver/avdecode.h"
#include "cuda_internal.h"

/* What a decoder remembers between pictures. */
struct h264_cuvid {
    struct avdec *dec;
    uint8_t sps[64];
    size_t sps_size;
    uint8_t *pps[256];
    size_t pps_size[256];
    /* The constant the client adds to every POC of a coded video sequence (8.2.1: only
     * differences matter), learnt at each IDR and after memory_management_control_operation 5. */
    int32_t poc_offset;
    int poc_offset_known;
};

/* What was decoded into the surface, as the DPB entries of later pictures must name it. */
struct h264_cuvid_picture {
    int32_t poc[2];       /* CurrFieldOrderCnt as the client gave it */
    int32_t poc_after_mmco5[2]; /* the same after MMCO 5 (8.2.1: tempPicOrderCnt subtracted) */
    uint32_t frame_num;   /* as coded; considered 0 after MMCO 5 (7.4.3) */
    int mmco5;
    int reference;
    int idr;
};

/* Checks the picture against its own slices, decodes it into picture. Returns CUDA_SUCCESS,
 * CUDA_ERROR_INVALID_VALUE (a VALIDATION line was written) or CUDA_ERROR_NOT_SUPPORTED (REFUSED);
 * *damaged is set when libavcodec failed on a picture that passed the checks. */
CUresult h264_cuvid_decode(struct h264_cuvid *state, const CUVIDPICPARAMS *params, struct avdec_picture *picture,
                           struct h264_cuvid_picture *decoded, int *damaged);
void h264_cuvid_free(struct h264_cuvid *state);

#endif
