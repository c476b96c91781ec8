/* The software VA driver's H.264 encoder (VAEntrypointEncSlice): lossless, every macroblock
 * I_PCM (7.3.5), CAVLC, synchronous in vaEndPicture. driver.c and driver_*.c own the VA objects
 * and the lock (driver_encode.c calls in here); this part sees plain memory. See README.md for the bitstream it writes. */
#ifndef SWIFTVT_SW_ENCODE_H
#define SWIFTVT_SW_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <va/va.h>

/* Where the encoder reports. report() takes one line (no newline) for stderr (when to_stderr)
 * and the report file; log() one line for SWIFTVT_VA_LOG; paramlog may be NULL. */
struct enc_hooks {
    void (*report)(void *opaque, int to_stderr, const char *line);
    void (*log)(void *opaque, const char *line);
    void *opaque;
    FILE *paramlog;
};

/* An NV12 surface in system memory: alloc_height luma rows of pitch bytes, then the interleaved
 * Cb/Cr plane of alloc_height / 2 rows. */
struct enc_surface {
    uint8_t *data;
    uint32_t pitch;
    uint32_t alloc_height;
};

/* A coded buffer: its one segment, and the memory after it where the bitstream goes. */
struct enc_coded {
    VACodedBufferSegment *segment;
    uint8_t *data;
    size_t capacity;
};

struct enc_picture_input {
    const struct enc_surface *source;        /* vaBeginPicture's render target */
    struct enc_surface *reconstructed;       /* CurrPic.picture_id; may be the same memory */
    struct enc_coded *coded;                 /* the picture parameters' coded_buf */
    uint32_t injected_status;                /* VA_CODED_BUF_STATUS_* bits (SWIFTVT_VA_FAIL_CODED) */
    int discard_output;                      /* SWIFTVT_VA_FAIL_END_PICTURE: an empty coded buffer */
    unsigned tamper;                         /* ENCODE_TAMPER_* (SWIFTVT_VA_TAMPER) */
};

/* Self-test of the validation (SWIFTVT_VA_TAMPER=encode-frame-num,encode-ref-list): what a buggy
 * client would send, applied to the rendered parameters before they are checked. */
enum {
    ENCODE_TAMPER_FRAME_NUM = 1, /* frame_num + 1 in the picture parameters of non-IDR pictures */
    ENCODE_TAMPER_REF_LIST = 2,  /* RefPicList0[0] of P and B slices names the picture's own reconstruction */
};

/* What a real driver's encoder does differently (SWIFTVT_VA_PERSONALITY, README.md "Driver
 * personalities"); all zero: this driver's own behaviour. */
enum enc_cabac_handling {
    ENC_CABAC_REFUSED_AT_RENDER = 0, /* REFUSED at vaRenderPicture */
    ENC_CABAC_REFUSED_AT_END,        /* accepted at vaRenderPicture, REFUSED at vaEndPicture (iHD) */
    ENC_CABAC_IGNORED,               /* the flag is stored, the slices are CAVLC anyway (Mesa) */
};
struct enc_quirks {
    int qp_from_pic_init_only;       /* the QP is pic_init_qp; slice_qp_delta is not read (old Mesa) */
    enum enc_cabac_handling cabac;
    int sps_without_vui;             /* every SPS is the driver's, without VUI (Mesa) */
    int quality_bitfield;            /* the quality level is radeonsi's bit-field (Mesa vlVaQualityBits) */
};

struct h264_encoder;

/* packed_headers: the VA_ENC_PACKED_HEADER_* bits of the config; rate_control its VA_RC_* mode. */
struct h264_encoder *h264_encoder_new(VAProfile profile, uint32_t rate_control, uint32_t packed_headers,
                                      const struct enc_quirks *quirks);
void h264_encoder_free(struct h264_encoder *enc);
/* vaBeginPicture: forgets what an unfinished picture had rendered. */
void h264_encoder_begin(struct h264_encoder *enc);
/* vaRenderPicture, one buffer: the parameters are copied (the client may destroy the buffer at
 * once). Refusals and validation complaints go through hooks. */
VAStatus h264_encoder_render(struct h264_encoder *enc, const struct enc_hooks *hooks, VABufferType type,
                             const void *data, uint32_t size, uint32_t num_elements);
/* The reconstructed surface (CurrPic.picture_id) and the coded buffer of the rendered picture
 * parameters; 0 when there are none. */
int h264_encoder_targets(const struct h264_encoder *enc, VASurfaceID *reconstructed, VABufferID *coded_buffer);
/* vaEndPicture: encodes the picture into in->coded and copies the source into the reconstructed
 * surface. VA_STATUS_ERROR_ENCODING_ERROR when the VA parameters contradict the packed headers or
 * the reference structure (VALIDATION lines). */
VAStatus h264_encoder_end(struct h264_encoder *enc, const struct enc_hooks *hooks, const struct enc_picture_input *in);

/* Names used in the parameter log: "cb", "main", "high"; "cqp", "cbr", "vbr". */
const char *h264_encoder_profile_name(VAProfile profile);
const char *h264_encoder_rc_name(uint32_t rate_control);

#endif
