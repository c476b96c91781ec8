/* The software VA driver's H.264 encoder; see encode.h and README.md.
 *
 * Every macroblock is coded I_PCM (7.3.5): the samples of the source surface, unchanged, so the
 * output is lossless and the reconstruction is a copy of the source. Rate control, QP and the
 * reference structure change nothing in the pictures; they are taken, checked against what the
 * client writes into its packed headers, and logged, so that a client can be tested against it.
 *
 * The coded buffer holds Annex B NAL units, each after a 4-byte start code, in this order:
 * parameter sets the driver writes itself (only when the client sends none, see
 * write_parameter_sets), then every packed header in submission order, where each packed slice
 * header becomes a slice NAL unit (the client's header bits + the driver's slice_data()), then
 * the slices the client sent no packed header for, with headers the driver writes. */
#include "encode.h"
#include "bits.h"
#include "h264.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECONSTRUCTED 64   /* reconstructed reference pictures remembered (surfaces of a pool) */
#define PCM_BYTES_PER_MB 384   /* 256 luma + 2 x 64 chroma samples, 8 bits each (7.3.5) */

struct packed_header {
    uint32_t type;             /* VAEncPackedHeaderType */
    uint32_t bit_length;
    int has_emulation_bytes;
    uint8_t *data;
    size_t size;               /* bytes: (bit_length + 7) / 8 */
};

/* A reference picture's reconstruction: which surface holds it, and its POC and frame_num. */
struct reconstructed {
    VASurfaceID surface;
    int32_t poc;
    uint32_t frame_num;
};

struct h264_encoder {
    struct enc_quirks quirks;
    int cabac_pending;         /* ENC_CABAC_REFUSED_AT_END: this picture asked for CABAC */
    VAProfile profile;
    uint32_t rate_control;
    uint32_t packed_headers;
    /* The sequence: kept from the last sequence parameter buffer (clients send it at IDRs). */
    int have_seq;
    VAEncSequenceParameterBufferH264 seq;
    char last_seq_line[512];
    /* Parameter sets the client sent as packed headers, by id, as a decoder reads them. */
    struct h264_sps_info sps[32];
    int have_sps[32];
    struct h264_pps_info pps[256];
    int have_pps[256];
    /* The PPS the driver wrote last (when the client sends none), to rewrite it when it changes. */
    uint8_t written_pps[64];
    size_t written_pps_size;
    /* Reconstructed reference pictures since the last IDR. */
    struct reconstructed refs[MAX_RECONSTRUCTED];
    int num_refs;
    int32_t idr_poc;           /* CurrPic.TopFieldOrderCnt of the last IDR: logged POCs are relative */
    long pictures;
    long refusals;
    /* The picture between vaBeginPicture and vaEndPicture. */
    int have_pic;
    VAEncPictureParameterBufferH264 pic;
    VAEncSliceParameterBufferH264 *slices;
    int num_slices, cap_slices;
    struct packed_header *packed;
    int num_packed, cap_packed;
    int have_packed_param;     /* a VAEncPackedHeaderParameterBuffer waiting for its data */
    VAEncPackedHeaderParameterBuffer packed_param;
    int refused;               /* a buffer of this picture was refused */
};

/* ---------- reporting ---------- */

static void hook_report(const struct enc_hooks *hooks, int to_stderr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void hook_report(const struct enc_hooks *hooks, int to_stderr, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    hooks->report(hooks->opaque, to_stderr, line);
}

static void hook_log(const struct enc_hooks *hooks, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hook_log(const struct enc_hooks *hooks, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    hooks->log(hooks->opaque, line);
}

static void paramlog(const struct enc_hooks *hooks, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void paramlog(const struct enc_hooks *hooks, const char *fmt, ...)
{
    if (!hooks->paramlog)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(hooks->paramlog, fmt, ap);
    va_end(ap);
    fputc('\n', hooks->paramlog);
    fflush(hooks->paramlog);
}

/* A contradiction in what the client sent: one VALIDATION line, and the picture fails. */
struct checker {
    const struct h264_encoder *enc;
    const struct enc_hooks *hooks;
    int count;
};

static void complain(struct checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void complain(struct checker *c, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    c->count++;
    hook_report(c->hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: %s", c->enc->pictures, what);
}

/* "<field>: VA parameters <x>, <source> <y>" when they differ. */
static void compare(struct checker *c, const char *field, long va, const char *source, long other)
{
    if (va != other)
        complain(c, "%s: VA parameters %ld, %s %ld", field, va, source, other);
}

static VAStatus refuse(struct h264_encoder *enc, const struct enc_hooks *hooks, const char *why)
{
    enc->refused = 1;
    if (enc->refusals++ == 0)
        hook_report(hooks, 1, "swiftvt_sw REFUSED encode: %s", why);
    return VA_STATUS_ERROR_INVALID_PARAMETER;
}

const char *h264_encoder_profile_name(VAProfile profile)
{
    switch (profile) {
    case VAProfileH264ConstrainedBaseline: return "cb";
    case VAProfileH264Main: return "main";
    case VAProfileH264High: return "high";
    default: return "?";
    }
}

const char *h264_encoder_rc_name(uint32_t rate_control)
{
    switch (rate_control) {
    case VA_RC_CQP: return "cqp";
    case VA_RC_CBR: return "cbr";
    case VA_RC_VBR: return "vbr";
    case VA_RC_ICQ: return "icq";
    default: return "?";
    }
}

/* ---------- life cycle ---------- */

struct h264_encoder *h264_encoder_new(VAProfile profile, uint32_t rate_control, uint32_t packed_headers,
                                      const struct enc_quirks *quirks)
{
    struct h264_encoder *enc = calloc(1, sizeof(*enc));
    if (!enc)
        return NULL;
    if (quirks)
        enc->quirks = *quirks;
    enc->profile = profile;
    enc->rate_control = rate_control;
    enc->packed_headers = packed_headers;
    return enc;
}

static void clear_picture(struct h264_encoder *enc)
{
    for (int i = 0; i < enc->num_packed; i++)
        free(enc->packed[i].data);
    enc->num_packed = 0;
    enc->num_slices = 0;
    enc->have_pic = 0;
    enc->have_packed_param = 0;
    enc->refused = 0;
    enc->cabac_pending = 0;
}

void h264_encoder_free(struct h264_encoder *enc)
{
    if (!enc)
        return;
    clear_picture(enc);
    free(enc->packed);
    free(enc->slices);
    free(enc);
}

void h264_encoder_begin(struct h264_encoder *enc)
{
    clear_picture(enc);
}

int h264_encoder_targets(const struct h264_encoder *enc, VASurfaceID *reconstructed, VABufferID *coded_buffer)
{
    if (!enc->have_pic)
        return 0;
    *reconstructed = enc->pic.CurrPic.picture_id;
    *coded_buffer = enc->pic.coded_buf;
    return 1;
}

/* ---------- vaRenderPicture ---------- */

static void log_sequence(struct h264_encoder *enc, const struct enc_hooks *hooks)
{
    const VAEncSequenceParameterBufferH264 *s = &enc->seq;
    char line[sizeof(enc->last_seq_line)];
    snprintf(line, sizeof(line),
             "encseq profile=%s level_idc=%u intra_period=%u intra_idr_period=%u ip_period=%u bits_per_second=%u "
             "max_num_ref_frames=%u mbs=%ux%u frame_cropping=%u crop=%u,%u,%u,%u log2_max_frame_num=%u poc_type=%u "
             "log2_max_poc_lsb=%u vui=%u timing=%u/%u",
             h264_encoder_profile_name(enc->profile), s->level_idc, s->intra_period, s->intra_idr_period,
             s->ip_period, s->bits_per_second, s->max_num_ref_frames, s->picture_width_in_mbs,
             s->picture_height_in_mbs, s->frame_cropping_flag, s->frame_crop_left_offset, s->frame_crop_right_offset,
             s->frame_crop_top_offset, s->frame_crop_bottom_offset, s->seq_fields.bits.log2_max_frame_num_minus4 + 4,
             s->seq_fields.bits.pic_order_cnt_type, s->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4,
             s->vui_parameters_present_flag, s->num_units_in_tick, s->time_scale);
    /* Once per sequence parameter buffer that differs from the previous one. */
    if (strcmp(line, enc->last_seq_line) != 0) {
        paramlog(hooks, "%s", line);
        memcpy(enc->last_seq_line, line, sizeof(line));
    }
}

static VAStatus render_sequence(struct h264_encoder *enc, const struct enc_hooks *hooks, const void *data, uint32_t size)
{
    if (size < sizeof(VAEncSequenceParameterBufferH264)) {
        hook_log(hooks, "vaRenderPicture: sequence parameter buffer of %u bytes, want %zu", size,
                 sizeof(VAEncSequenceParameterBufferH264));
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    VAEncSequenceParameterBufferH264 seq;
    memcpy(&seq, data, sizeof(seq));
    if (!seq.seq_fields.bits.frame_mbs_only_flag)
        return refuse(enc, hooks, "field pictures and MBAFF (frame_mbs_only_flag 0); this driver encodes frames only");
    if (seq.seq_fields.bits.chroma_format_idc != 1 || seq.bit_depth_luma_minus8 || seq.bit_depth_chroma_minus8)
        return refuse(enc, hooks, "only 8-bit 4:2:0 (chroma_format_idc 1, bit depth 8) is encoded");
    if (seq.picture_width_in_mbs < 1 || seq.picture_height_in_mbs < 1 || seq.picture_width_in_mbs > 256 ||
        seq.picture_height_in_mbs > 256 || seq.seq_fields.bits.pic_order_cnt_type > 2)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    enc->seq = seq;
    enc->have_seq = 1;
    log_sequence(enc, hooks);
    return VA_STATUS_SUCCESS;
}

static VAStatus render_picture(struct h264_encoder *enc, const struct enc_hooks *hooks, const void *data, uint32_t size)
{
    if (size < sizeof(VAEncPictureParameterBufferH264))
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    VAEncPictureParameterBufferH264 pic;
    memcpy(&pic, data, sizeof(pic));
    if (pic.pic_fields.bits.entropy_coding_mode_flag) {
        switch (enc->quirks.cabac) {
        case ENC_CABAC_REFUSED_AT_RENDER:
            return refuse(enc, hooks, "CABAC (entropy_coding_mode_flag 1); this driver encodes CAVLC only");
        case ENC_CABAC_REFUSED_AT_END:
            enc->cabac_pending = 1; /* h264_encoder_end refuses it */
            break;
        case ENC_CABAC_IGNORED:
            hook_log(hooks, "entropy_coding_mode_flag 1 stored and ignored (personality): the slices are CAVLC");
            break;
        }
    }
    if (pic.CurrPic.flags & (VA_PICTURE_H264_TOP_FIELD | VA_PICTURE_H264_BOTTOM_FIELD))
        return refuse(enc, hooks, "field pictures (CurrPic flags TOP_FIELD/BOTTOM_FIELD); this driver encodes "
                                  "frames only");
    enc->pic = pic;
    enc->have_pic = 1;
    return VA_STATUS_SUCCESS;
}

static VAStatus render_slices(struct h264_encoder *enc, const struct enc_hooks *hooks, const void *data, uint32_t size,
                              uint32_t num_elements)
{
    if (size != sizeof(VAEncSliceParameterBufferH264) || num_elements < 1 || num_elements > 8192)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    const VAEncSliceParameterBufferH264 *slices = data;
    for (uint32_t i = 0; i < num_elements; i++) {
        uint32_t type = slices[i].slice_type % 5;
        if (type == SLICE_SP || type == SLICE_SI)
            return refuse(enc, hooks, "SP/SI slices (slice_type 3, 4) are not in the Constrained Baseline, Main "
                                      "or High profiles");
    }
    int needed = enc->num_slices + (int)num_elements;
    if (needed > enc->cap_slices) {
        int cap = needed * 2;
        VAEncSliceParameterBufferH264 *grown = realloc(enc->slices, sizeof(*grown) * (size_t)cap);
        if (!grown)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        enc->slices = grown;
        enc->cap_slices = cap;
    }
    memcpy(enc->slices + enc->num_slices, data, sizeof(VAEncSliceParameterBufferH264) * num_elements);
    enc->num_slices = needed;
    return VA_STATUS_SUCCESS;
}

static VAStatus render_packed_data(struct h264_encoder *enc, const struct enc_hooks *hooks, const void *data,
                                   uint32_t size, uint32_t num_elements)
{
    if (!enc->have_packed_param) {
        hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: a packed header data buffer without the "
                              "VAEncPackedHeaderParameterBuffer before it", enc->pictures);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    enc->have_packed_param = 0;
    size_t bytes = (size_t)size * num_elements;
    size_t needed = (enc->packed_param.bit_length + 7u) / 8u;
    if (needed > bytes || needed == 0) {
        hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: packed header type %u: bit_length %u, "
                              "data buffer %zu bytes", enc->pictures, enc->packed_param.type,
                    enc->packed_param.bit_length, bytes);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    if (enc->num_packed == enc->cap_packed) {
        int cap = enc->cap_packed ? enc->cap_packed * 2 : 8;
        struct packed_header *grown = realloc(enc->packed, sizeof(*grown) * (size_t)cap);
        if (!grown)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        enc->packed = grown;
        enc->cap_packed = cap;
    }
    struct packed_header *ph = &enc->packed[enc->num_packed];
    ph->data = malloc(needed);
    if (!ph->data)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    memcpy(ph->data, data, needed);
    ph->size = needed;
    ph->type = enc->packed_param.type;
    ph->bit_length = enc->packed_param.bit_length;
    ph->has_emulation_bytes = enc->packed_param.has_emulation_bytes != 0;
    enc->num_packed++;
    return VA_STATUS_SUCCESS;
}

/* One encmisc line per misc parameter buffer. */
static VAStatus render_misc(const struct h264_encoder *enc, const struct enc_hooks *hooks, const void *data,
                            uint32_t size)
{
    (void)enc;
    if (size < sizeof(VAEncMiscParameterBuffer))
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    const VAEncMiscParameterBuffer *misc = data;
    const void *body = misc->data;
    size_t body_size = size - sizeof(VAEncMiscParameterBuffer);
#define NEED(T)                                                                                     \
    if (body_size < offsetof(T, va_reserved)) {                                                     \
        hook_log(hooks, "vaRenderPicture: misc parameter type %d: %zu bytes, want %zu", misc->type, \
                 body_size, offsetof(T, va_reserved));                                              \
        return VA_STATUS_ERROR_INVALID_PARAMETER;                                                   \
    }
    switch (misc->type) {
    case VAEncMiscParameterTypeRateControl: {
        NEED(VAEncMiscParameterRateControl);
        VAEncMiscParameterRateControl rc;
        memcpy(&rc, body, offsetof(VAEncMiscParameterRateControl, va_reserved));
        paramlog(hooks, "encmisc ratecontrol bits_per_second=%u target_percentage=%u window_size=%u initial_qp=%u "
                        "min_qp=%u max_qp=%u", rc.bits_per_second, rc.target_percentage, rc.window_size,
                 rc.initial_qp, rc.min_qp, rc.max_qp);
        if (rc.ICQ_quality_factor)
            paramlog(hooks, "encmisc icq quality_factor=%u", rc.ICQ_quality_factor);
        break;
    }
    case VAEncMiscParameterTypeFrameRate: {
        NEED(VAEncMiscParameterFrameRate);
        VAEncMiscParameterFrameRate fr;
        memcpy(&fr, body, offsetof(VAEncMiscParameterFrameRate, va_reserved));
        /* va.h: numerator in the low 16 bits, denominator in the high 16 bits, 0 meaning 1. */
        uint32_t num = fr.framerate & 0xffff, den = fr.framerate >> 16;
        paramlog(hooks, "encmisc framerate %u/%u", num, den ? den : 1);
        break;
    }
    case VAEncMiscParameterTypeHRD: {
        NEED(VAEncMiscParameterHRD);
        VAEncMiscParameterHRD hrd;
        memcpy(&hrd, body, offsetof(VAEncMiscParameterHRD, va_reserved));
        paramlog(hooks, "encmisc hrd buffer_size=%u initial_buffer_fullness=%u", hrd.buffer_size,
                 hrd.initial_buffer_fullness);
        break;
    }
    case VAEncMiscParameterTypeQualityLevel: {
        NEED(VAEncMiscParameterBufferQualityLevel);
        VAEncMiscParameterBufferQualityLevel quality;
        memcpy(&quality, body, offsetof(VAEncMiscParameterBufferQualityLevel, va_reserved));
        if (enc->quirks.quality_bitfield && quality.quality_level > 1) {
            /* radeonsi reads the level as bits (Mesa vlVaQualityBits): bit 0 valid, bits 1-2 the
             * preset, bit 3 pre-encoding, bit 4 VBAQ; 1 is the default (balanced). */
            static const char *presets[] = { "speed", "balanced", "quality", "high-quality" };
            uint32_t q = quality.quality_level;
            paramlog(hooks, "encmisc quality level=%u bitfield=valid:%u,preset:%s,pre_encode:%u,vbaq:%u", q, q & 1,
                     presets[(q >> 1) & 3], (q >> 3) & 1, (q >> 4) & 1);
        } else {
            paramlog(hooks, "encmisc quality level=%u", quality.quality_level);
        }
        break;
    }
    default:
        paramlog(hooks, "encmisc type=%d", misc->type);
        break;
    }
#undef NEED
    return VA_STATUS_SUCCESS;
}

VAStatus h264_encoder_render(struct h264_encoder *enc, const struct enc_hooks *hooks, VABufferType type,
                             const void *data, uint32_t size, uint32_t num_elements)
{
    switch ((int)type) {
    case VAEncSequenceParameterBufferType:
        return render_sequence(enc, hooks, data, size);
    case VAEncPictureParameterBufferType:
        return render_picture(enc, hooks, data, size);
    case VAEncSliceParameterBufferType:
        return render_slices(enc, hooks, data, size, num_elements);
    case VAEncPackedHeaderParameterBufferType:
        if (size < sizeof(VAEncPackedHeaderParameterBuffer))
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        if (enc->have_packed_param)
            hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: a packed header parameter buffer "
                                  "without its data buffer (type %u)", enc->pictures, enc->packed_param.type);
        memcpy(&enc->packed_param, data, sizeof(enc->packed_param));
        enc->have_packed_param = 1;
        return VA_STATUS_SUCCESS;
    case VAEncPackedHeaderDataBufferType:
        return render_packed_data(enc, hooks, data, size, num_elements);
    case VAEncMiscParameterBufferType:
        return render_misc(enc, hooks, data, size);
    default:
        hook_log(hooks, "vaRenderPicture: encode buffer type %d ignored", type);
        return VA_STATUS_SUCCESS;
    }
}

/* ---------- packed headers: NAL units, start codes, emulation prevention ---------- */

struct bytes {
    uint8_t *data;
    size_t size, capacity;
    int failed;
};

static uint8_t *bytes_reserve(struct bytes *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->size + n > b->capacity) {
        size_t cap = (b->size + n) * 2 + 4096;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return NULL;
        }
        b->data = grown;
        b->capacity = cap;
    }
    return b->data + b->size;
}

static void bytes_append(struct bytes *b, const void *data, size_t n)
{
    uint8_t *at = bytes_reserve(b, n);
    if (at) {
        memcpy(at, data, n);
        b->size += n;
    }
}

/* A NAL unit that is already escaped, after the 4-byte start code of the output (B.1.2). */
static void append_nal(struct bytes *b, const uint8_t *nal, size_t size)
{
    static const uint8_t start_code[4] = { 0, 0, 0, 1 };
    bytes_append(b, start_code, 4);
    bytes_append(b, nal, size);
}

/* A NAL unit from its unescaped form (header byte + RBSP): emulation prevention (7.4.1) over the
 * payload, then the start code. Worst case 3 bytes for every 2 of the RBSP. */
static void append_rbsp_nal(struct bytes *b, const uint8_t *unescaped, size_t size)
{
    size_t capacity = size + size / 2 + 8;
    uint8_t *at = bytes_reserve(b, 4 + capacity);
    if (!at)
        return;
    at[0] = 0, at[1] = 0, at[2] = 0, at[3] = 1;
    size_t n = nal_escape(at + 4, capacity, unescaped[0], unescaped + 1, size - 1);
    if (n == 0) {
        b->failed = 1;
        return;
    }
    b->size += 4 + n;
}

/* Where a NAL unit sits in packed header data. */
struct nal_span {
    size_t start;              /* offset of the NAL unit header byte */
    size_t size;
};

/* Splits packed header data into its NAL units. The data must begin with a start code (B.1.2:
 * leading zero bytes then 00 00 01). With emulation prevention bytes present, 00 00 01 cannot
 * occur inside a NAL unit, so every start code starts a new one, and the zero bytes before a
 * start code (trailing_zero_8bits, zero_byte) are dropped. Without them the data is one NAL unit:
 * its RBSP may contain 00 00 01 legitimately. The last unit keeps its zero bytes unless
 * strip_last: a packed slice header may end in a zero byte (its last bits and the padding after
 * them), other headers end in rbsp_trailing_bits(). Returns the number of units, or -1. */
static int split_nal_units(const struct packed_header *ph, int strip_last, struct nal_span *spans, int max)
{
    const uint8_t *d = ph->data;
    size_t size = ph->size, i = 0;
    while (i < size && d[i] == 0)
        i++;
    if (i < 2 || i >= size || d[i] != 1)
        return -1;
    i++;
    int n = 0;
    for (;;) {
        if (i >= size || n == max)
            return -1;
        size_t start = i, next = size, end = size;
        if (ph->has_emulation_bytes) {
            for (size_t k = start; k + 2 < size; k++) {
                if (d[k] == 0 && d[k + 1] == 0 && d[k + 2] == 1) {
                    next = k;
                    break;
                }
            }
            end = next;
        }
        if (next < size || strip_last)
            while (end > start && d[end - 1] == 0)
                end--;
        if (end == start)
            return -1;
        spans[n++] = (struct nal_span){ start, end - start };
        if (next >= size)
            return n;
        i = next + 3;
    }
}

/* ---------- parameter sets: the client's, as a decoder will read them ---------- */

static void params_from_va(const VAEncSequenceParameterBufferH264 *seq, const VAEncPictureParameterBufferH264 *pic,
                           struct h264_params *p)
{
    memset(p, 0, sizeof(*p));
    p->log2_max_frame_num = seq->seq_fields.bits.log2_max_frame_num_minus4 + 4;
    p->poc_type = seq->seq_fields.bits.pic_order_cnt_type;
    p->log2_max_poc_lsb = seq->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4;
    p->frame_mbs_only = seq->seq_fields.bits.frame_mbs_only_flag;
    p->delta_pic_order_always_zero = seq->seq_fields.bits.delta_pic_order_always_zero_flag;
    p->bottom_field_pic_order_in_frame_present = pic->pic_fields.bits.pic_order_present_flag;
    p->redundant_pic_cnt_present = pic->pic_fields.bits.redundant_pic_cnt_present_flag;
    p->weighted_pred = pic->pic_fields.bits.weighted_pred_flag;
    p->weighted_bipred_idc = pic->pic_fields.bits.weighted_bipred_idc;
    p->entropy_coding_mode = pic->pic_fields.bits.entropy_coding_mode_flag;
    p->deblocking_filter_control_present = pic->pic_fields.bits.deblocking_filter_control_present_flag;
    p->chroma_array_type = seq->seq_fields.bits.chroma_format_idc;
    p->max_num_ref_frames = (int)seq->max_num_ref_frames;
    p->num_ref_idx_default[0] = pic->num_ref_idx_l0_active_minus1 + 1;
    p->num_ref_idx_default[1] = pic->num_ref_idx_l1_active_minus1 + 1;
}

/* A packed SPS against the sequence parameters of the same id. */
static void check_sps(struct checker *c, const struct h264_sps_info *sps, const VAEncSequenceParameterBufferH264 *seq,
                      VAProfile profile)
{
    const char *src = "packed SPS";
    compare(c, "SPS profile_idc (the config's profile)", h264_profile_idc(profile), src, sps->profile_idc);
    compare(c, "SPS level_idc", seq->level_idc, src, sps->level_idc);
    compare(c, "SPS chroma_format_idc", seq->seq_fields.bits.chroma_format_idc, src, sps->chroma_format_idc);
    compare(c, "SPS bit_depth_luma_minus8", seq->bit_depth_luma_minus8, src, sps->bit_depth_luma_minus8);
    compare(c, "SPS pic_width_in_mbs", seq->picture_width_in_mbs, src, sps->width_mbs);
    compare(c, "SPS pic_height_in_map_units", seq->picture_height_in_mbs, src, sps->height_map_units);
    compare(c, "SPS frame_mbs_only_flag", seq->seq_fields.bits.frame_mbs_only_flag, src, sps->frame_mbs_only);
    compare(c, "SPS log2_max_frame_num", seq->seq_fields.bits.log2_max_frame_num_minus4 + 4, src,
            sps->log2_max_frame_num);
    compare(c, "SPS pic_order_cnt_type", seq->seq_fields.bits.pic_order_cnt_type, src, sps->poc_type);
    if (sps->poc_type == 0)
        compare(c, "SPS log2_max_pic_order_cnt_lsb", seq->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4,
                src, sps->log2_max_poc_lsb);
    compare(c, "SPS max_num_ref_frames", seq->max_num_ref_frames, src, sps->max_num_ref_frames);
    compare(c, "SPS frame_cropping_flag", seq->frame_cropping_flag, src, sps->frame_cropping);
    if (sps->frame_cropping && seq->frame_cropping_flag) {
        compare(c, "SPS frame_crop_left_offset", seq->frame_crop_left_offset, src, sps->crop[0]);
        compare(c, "SPS frame_crop_right_offset", seq->frame_crop_right_offset, src, sps->crop[1]);
        compare(c, "SPS frame_crop_top_offset", seq->frame_crop_top_offset, src, sps->crop[2]);
        compare(c, "SPS frame_crop_bottom_offset", seq->frame_crop_bottom_offset, src, sps->crop[3]);
    }
    compare(c, "SPS vui_parameters_present_flag", seq->vui_parameters_present_flag, src, sps->vui_present);
}

/* A packed PPS against the picture parameters of the same id. The entropy coder matters most:
 * the slice data this driver writes is CAVLC. */
static void check_pps(struct checker *c, const struct h264_pps_info *pps, const VAEncPictureParameterBufferH264 *pic)
{
    const char *src = "packed PPS";
    compare(c, "PPS entropy_coding_mode_flag", pic->pic_fields.bits.entropy_coding_mode_flag, src,
            pps->entropy_coding_mode);
    compare(c, "PPS seq_parameter_set_id", pic->seq_parameter_set_id, src, pps->sps_id);
    compare(c, "PPS pic_init_qp", pic->pic_init_qp, src, pps->pic_init_qp);
    compare(c, "PPS num_ref_idx_l0_default_active_minus1", pic->num_ref_idx_l0_active_minus1, src,
            (long)pps->num_ref_idx_default[0] - 1);
    compare(c, "PPS num_ref_idx_l1_default_active_minus1", pic->num_ref_idx_l1_active_minus1, src,
            (long)pps->num_ref_idx_default[1] - 1);
    compare(c, "PPS weighted_pred_flag", pic->pic_fields.bits.weighted_pred_flag, src, pps->weighted_pred);
    compare(c, "PPS weighted_bipred_idc", pic->pic_fields.bits.weighted_bipred_idc, src, pps->weighted_bipred_idc);
    compare(c, "PPS bottom_field_pic_order_in_frame_present_flag", pic->pic_fields.bits.pic_order_present_flag, src,
            pps->bottom_field_pic_order_in_frame_present);
    compare(c, "PPS deblocking_filter_control_present_flag",
            pic->pic_fields.bits.deblocking_filter_control_present_flag, src, pps->deblocking_filter_control_present);
    compare(c, "PPS constrained_intra_pred_flag", pic->pic_fields.bits.constrained_intra_pred_flag, src,
            pps->constrained_intra_pred);
    compare(c, "PPS redundant_pic_cnt_present_flag", pic->pic_fields.bits.redundant_pic_cnt_present_flag, src,
            pps->redundant_pic_cnt_present);
    compare(c, "PPS transform_8x8_mode_flag", pic->pic_fields.bits.transform_8x8_mode_flag, src,
            pps->transform_8x8_mode);
    compare(c, "PPS chroma_qp_index_offset", pic->chroma_qp_index_offset, src, pps->chroma_qp_index_offset);
}

/* Remembers a packed SPS or PPS and checks it against the VA parameters. */
static void read_parameter_set(struct h264_encoder *enc, struct checker *c, const uint8_t *nal, size_t size)
{
    uint32_t type = nal[0] & 0x1f;
    if ((type != 7 && type != 8) || size < 2)
        return;
    uint8_t *rbsp = malloc(size);
    if (!rbsp)
        return;
    size_t rbsp_size = nal_unescape(rbsp, nal + 1, size - 1);
    char error[160];
    if (type == 7) {
        struct h264_sps_info sps;
        if (h264_parse_sps(rbsp, rbsp_size, &sps, error, sizeof(error)) < 0) {
            complain(c, "packed SPS: %s", error);
        } else {
            enc->sps[sps.sps_id] = sps;
            enc->have_sps[sps.sps_id] = 1;
            if (enc->have_seq && sps.sps_id == enc->seq.seq_parameter_set_id)
                check_sps(c, &sps, &enc->seq, enc->profile);
        }
    } else {
        struct h264_pps_info pps;
        if (h264_parse_pps(rbsp, rbsp_size, &pps, error, sizeof(error)) < 0) {
            complain(c, "packed PPS: %s", error);
        } else {
            enc->pps[pps.pps_id] = pps;
            enc->have_pps[pps.pps_id] = 1;
            if (pps.pps_id == enc->pic.pic_parameter_set_id)
                check_pps(c, &pps, &enc->pic);
        }
    }
    free(rbsp);
}

/* ---------- slices ---------- */

/* The number of active references of list `list` in VA terms: the slice's override, else the
 * picture's (PPS default) count. 0 for a list the slice type does not use. */
static int active_refs(const VAEncPictureParameterBufferH264 *pic, const VAEncSliceParameterBufferH264 *slice,
                       int list)
{
    uint32_t type = slice->slice_type % 5;
    if (type == SLICE_I || (list == 1 && type != SLICE_B))
        return 0;
    if (slice->num_ref_idx_active_override_flag)
        return (list ? slice->num_ref_idx_l1_active_minus1 : slice->num_ref_idx_l0_active_minus1) + 1;
    return (list ? pic->num_ref_idx_l1_active_minus1 : pic->num_ref_idx_l0_active_minus1) + 1;
}

/* The client's slice header (unescaped: NAL header byte, then the header's bits) checked against
 * VA parameters, parsed with the parameter sets a decoder will use. */
static void check_slice_header(struct h264_encoder *enc, struct checker *c, int index, const uint8_t *header,
                               size_t header_bits)
{
    const VAEncPictureParameterBufferH264 *pic = &enc->pic;
    const VAEncSliceParameterBufferH264 *slice = &enc->slices[index];
    size_t header_bytes = (header_bits + 7) / 8;
    /* pic_parameter_set_id decides which parameter sets apply: read it first (7.3.3). */
    struct bitreader br;
    br_init(&br, header + 1, header_bytes - 1);
    br_ue(&br);                 /* first_mb_in_slice */
    br_ue(&br);                 /* slice_type */
    uint32_t pps_id = br_ue(&br);
    struct h264_params params;
    if (pps_id < 256 && enc->have_pps[pps_id] && enc->have_sps[enc->pps[pps_id].sps_id])
        h264_params_from_sets(&enc->sps[enc->pps[pps_id].sps_id], &enc->pps[pps_id], &params);
    else /* no packed parameter sets: the driver writes them from the VA parameters */
        params_from_va(&enc->seq, pic, &params);
    /* The parser reads a NAL unit as it appears in a stream: escape the header again. */
    size_t capacity = header_bytes + header_bytes / 2 + 8;
    uint8_t *nal = malloc(capacity);
    if (!nal)
        return;
    size_t nal_size = nal_escape(nal, capacity, header[0], header + 1, header_bytes - 1);
    struct h264_slice_header sh;
    char field[160];
    if (nal_size == 0 || h264_parse_slice_header(nal, nal_size, &params, &sh) < 0) {
        complain(c, "slice[%d] packed slice header: %s", index, nal_size ? sh.error : "cannot be escaped");
        free(nal);
        return;
    }
    free(nal);
    const char *src = "packed slice header";
#define FIELD(name) (snprintf(field, sizeof(field), "slice[%d] %s", index, name), field)
    /* With CABAC, slice_data() starts with cabac_alignment_one_bits (7.3.4), which a client may
     * put at the end of its packed header (FFmpeg does). */
    long parsed_bits = sh.header_bits;
    if (params.entropy_coding_mode && (long)header_bits == ((parsed_bits + 7) & ~7L))
        parsed_bits = (long)header_bits;
    compare(c, FIELD("length in bits (bit_length less start code and emulation prevention bytes)"),
            (long)header_bits, "parse of the packed slice header", parsed_bits);
    int idr = pic->pic_fields.bits.idr_pic_flag;
    compare(c, FIELD("nal_unit_type (idr_pic_flag)"), idr ? 5 : 1, src, sh.nal_unit_type);
    compare(c, FIELD("nal_ref_idc != 0 (reference_pic_flag)"), pic->pic_fields.bits.reference_pic_flag != 0 || idr,
            src, sh.nal_ref_idc != 0);
    compare(c, FIELD("first_mb_in_slice (macroblock_address)"), slice->macroblock_address, src, sh.first_mb_in_slice);
    compare(c, FIELD("slice_type % 5"), slice->slice_type % 5, src, sh.slice_type);
    compare(c, FIELD("pic_parameter_set_id"), slice->pic_parameter_set_id, src, sh.pps_id);
    compare(c, FIELD("frame_num"), pic->frame_num % (1u << params.log2_max_frame_num), src, sh.frame_num);
    if (idr)
        compare(c, FIELD("idr_pic_id"), slice->idr_pic_id, src, sh.idr_pic_id);
    if (params.poc_type == 0) {
        uint32_t max_lsb = 1u << params.log2_max_poc_lsb;
        compare(c, FIELD("pic_order_cnt_lsb"), slice->pic_order_cnt_lsb, src, sh.pic_order_cnt_lsb);
        compare(c, FIELD("pic_order_cnt_lsb (CurrPic.TopFieldOrderCnt % MaxPicOrderCntLsb)"),
                (long)((uint32_t)pic->CurrPic.TopFieldOrderCnt % max_lsb), src, sh.pic_order_cnt_lsb);
    }
    if (sh.slice_type == SLICE_P || sh.slice_type == SLICE_B)
        compare(c, FIELD("num_ref_idx_l0_active_minus1"), active_refs(pic, slice, 0) - 1, src,
                sh.num_ref_idx_active[0] - 1);
    if (sh.slice_type == SLICE_B)
        compare(c, FIELD("num_ref_idx_l1_active_minus1"), active_refs(pic, slice, 1) - 1, src,
                sh.num_ref_idx_active[1] - 1);
    compare(c, FIELD("slice_qp_delta"), slice->slice_qp_delta, src, sh.slice_qp_delta);
#undef FIELD
}

/* slice_data() (7.3.4) of a CAVLC slice whose macroblocks are all I_PCM, then
 * rbsp_slice_trailing_bits() (7.3.2.10; no cabac_zero_word with CAVLC). */
static void write_slice_data(struct bitwriter *bw, const struct enc_surface *source, uint32_t width_mbs,
                             uint32_t first_mb, uint32_t num_mbs, uint32_t slice_type)
{
    /* mb_type of I_PCM: 25 in I slices (Table 7-11), after the 5 P types in P slices (Table 7-13),
     * after the 23 B types in B slices (Table 7-14). */
    uint32_t mb_type = slice_type == SLICE_I ? 25 : slice_type == SLICE_B ? 23 + 25 : 5 + 25;
    const uint8_t *chroma = source->data + (size_t)source->pitch * source->alloc_height;
    uint8_t samples[PCM_BYTES_PER_MB];
    for (uint32_t mb = first_mb; mb < first_mb + num_mbs; mb++) {
        uint32_t mb_x = mb % width_mbs, mb_y = mb / width_mbs;
        if (slice_type != SLICE_I)
            bw_ue(bw, 0); /* mb_skip_run: no macroblock is skipped */
        bw_ue(bw, mb_type);
        while (bw->pos & 7)
            bw_u(bw, 1, 0); /* pcm_alignment_zero_bit */
        /* pcm_sample_luma[256] in raster order within the macroblock, then pcm_sample_chroma: the
         * 64 Cb samples, then the 64 Cr samples (8x8 each for 4:2:0), from NV12's interleaved plane. */
        for (uint32_t y = 0; y < 16; y++)
            memcpy(samples + y * 16, source->data + (size_t)(mb_y * 16 + y) * source->pitch + mb_x * 16, 16);
        for (uint32_t y = 0; y < 8; y++) {
            const uint8_t *row = chroma + (size_t)(mb_y * 8 + y) * source->pitch + mb_x * 16;
            for (uint32_t x = 0; x < 8; x++) {
                samples[256 + y * 8 + x] = row[2 * x];
                samples[256 + 64 + y * 8 + x] = row[2 * x + 1];
            }
        }
        bw_put_aligned_bytes(bw, samples, sizeof(samples));
    }
    bw_trailing(bw);
}

/* The unescaped header of a packed slice header's last NAL unit: NAL header byte + slice_header()
 * bits (bit_length less the start code and emulation prevention bytes). Returns the number of
 * bits, or 0 when the bit length does not fit the data. */
static size_t packed_slice_header_bits(const struct packed_header *ph, const struct nal_span *span, uint8_t *header)
{
    size_t rbsp_size;
    if (ph->has_emulation_bytes)
        rbsp_size = nal_unescape(header, ph->data + span->start, span->size);
    else
        memcpy(header, ph->data + span->start, rbsp_size = span->size);
    size_t removed = span->size - rbsp_size;
    size_t prefix_bits = 8 * (span->start + removed);
    if (ph->bit_length < prefix_bits + 8 || ph->bit_length - prefix_bits > 8 * rbsp_size)
        return 0;
    return ph->bit_length - prefix_bits;
}

/* One slice NAL unit: the client's packed header bits (or the driver's header when ph is NULL),
 * then the I_PCM slice data, escaped as a whole (7.4.1). */
static void write_slice(struct h264_encoder *enc, struct checker *c, int index, const struct packed_header *ph,
                        const struct nal_span *span, const struct enc_surface *source, struct bytes *out)
{
    const VAEncSliceParameterBufferH264 *slice = &enc->slices[index];
    size_t header_capacity = ph ? span->size + 1 : 4096;
    uint8_t *header = calloc(1, header_capacity);
    if (!header) {
        out->failed = 1;
        return;
    }
    size_t header_bits;
    if (ph) {
        header_bits = packed_slice_header_bits(ph, span, header);
        if (header_bits == 0) {
            complain(c, "slice[%d] packed slice header: bit_length %u does not fit its %zu bytes after the start "
                        "code", index, ph->bit_length, span->size);
            free(header);
            return;
        }
        check_slice_header(enc, c, index, header, header_bits);
    } else {
        struct bitwriter hw;
        bw_init(&hw, header, header_capacity);
        h264_write_enc_slice_header(&hw, &enc->seq, &enc->pic, slice);
        header_bits = hw.pos;
    }
    size_t capacity = (header_bits + 7) / 8 + (size_t)slice->num_macroblocks * (PCM_BYTES_PER_MB + 8) + 16;
    uint8_t *rbsp = malloc(capacity);
    if (!rbsp) {
        free(header);
        out->failed = 1;
        return;
    }
    struct bitwriter bw;
    bw_init(&bw, rbsp, capacity);
    bw_copy_bits(&bw, header, header_bits);
    write_slice_data(&bw, source, enc->seq.picture_width_in_mbs, slice->macroblock_address, slice->num_macroblocks,
                     slice->slice_type % 5);
    if (bw.overflow)
        out->failed = 1;
    else
        append_rbsp_nal(out, rbsp, bw_bytes(&bw));
    free(rbsp);
    free(header);
}

/* ---------- checks of the picture as a whole ---------- */

/* The slices, in order, cover every macroblock once. Returns 0 when they do not: nothing can be
 * written then (a macroblock address past the picture would be read outside the surface). */
static int check_slice_coverage(struct h264_encoder *enc, struct checker *c)
{
    uint32_t total = (uint32_t)enc->seq.picture_width_in_mbs * enc->seq.picture_height_in_mbs;
    uint32_t next = 0;
    for (int i = 0; i < enc->num_slices; i++) {
        const VAEncSliceParameterBufferH264 *s = &enc->slices[i];
        if (s->macroblock_address != next || s->num_macroblocks == 0 || s->num_macroblocks > total - next) {
            complain(c, "slice[%d] macroblocks %u..+%u: the slices must cover macroblocks 0..%u in order, the next "
                        "one being %u", i, s->macroblock_address, s->num_macroblocks, total - 1, next);
            return 0;
        }
        next += s->num_macroblocks;
    }
    if (next != total) {
        complain(c, "slices cover macroblocks 0..%u of 0..%u", next ? next - 1 : 0, total - 1);
        return 0;
    }
    return 1;
}

static const struct reconstructed *find_reconstructed(const struct h264_encoder *enc, VASurfaceID surface)
{
    for (int i = 0; i < enc->num_refs; i++)
        if (enc->refs[i].surface == surface)
            return &enc->refs[i];
    return NULL;
}

static int valid_picture(const VAPictureH264 *p)
{
    return !(p->flags & VA_PICTURE_H264_INVALID) && p->picture_id != VA_INVALID_SURFACE;
}

/* ReferenceFrames and every active RefPicList0/1 entry name reconstructions of earlier reference
 * pictures of this sequence, with their POCs; list entries are among ReferenceFrames. */
static void check_references(struct h264_encoder *enc, struct checker *c)
{
    const VAEncPictureParameterBufferH264 *pic = &enc->pic;
    if (pic->pic_fields.bits.idr_pic_flag)
        return;
    for (int i = 0; i < 16; i++) {
        const VAPictureH264 *r = &pic->ReferenceFrames[i];
        if (!valid_picture(r))
            continue;
        const struct reconstructed *known = find_reconstructed(enc, r->picture_id);
        if (!known)
            complain(c, "ReferenceFrames[%d]: surface %#x is not the reconstruction (CurrPic) of an earlier reference "
                        "picture since the IDR", i, r->picture_id);
        else if (known->poc != r->TopFieldOrderCnt)
            complain(c, "ReferenceFrames[%d] (surface %#x) TopFieldOrderCnt: VA parameters %d, the picture "
                        "reconstructed there had %d", i, r->picture_id, r->TopFieldOrderCnt, known->poc);
    }
    for (int s = 0; s < enc->num_slices; s++) {
        const VAEncSliceParameterBufferH264 *slice = &enc->slices[s];
        for (int list = 0; list < 2; list++) {
            int n = active_refs(pic, slice, list);
            const VAPictureH264 *entries = list ? slice->RefPicList1 : slice->RefPicList0;
            for (int i = 0; i < n && i < 32; i++) {
                const VAPictureH264 *e = &entries[i];
                if (!valid_picture(e)) {
                    complain(c, "slice[%d] RefPicList%d[%d]: no picture for an active index (%d active)", s, list, i,
                             n);
                    continue;
                }
                int listed = 0;
                for (int k = 0; k < 16; k++)
                    if (valid_picture(&pic->ReferenceFrames[k]) && pic->ReferenceFrames[k].picture_id == e->picture_id)
                        listed = 1;
                const struct reconstructed *known = find_reconstructed(enc, e->picture_id);
                if (!listed)
                    complain(c, "slice[%d] RefPicList%d[%d]: surface %#x is not in ReferenceFrames", s, list, i,
                             e->picture_id);
                if (!known)
                    complain(c, "slice[%d] RefPicList%d[%d]: surface %#x is not the reconstruction of an earlier "
                                "reference picture since the IDR", s, list, i, e->picture_id);
                else if (known->poc != e->TopFieldOrderCnt)
                    complain(c, "slice[%d] RefPicList%d[%d] (surface %#x) TopFieldOrderCnt: VA parameters %d, the "
                                "picture reconstructed there had %d", s, list, i, e->picture_id, e->TopFieldOrderCnt,
                             known->poc);
            }
        }
    }
}

/* The surface now holds this picture's reconstruction: what it held before is gone. */
static void remember_reconstruction(struct h264_encoder *enc)
{
    const VAEncPictureParameterBufferH264 *pic = &enc->pic;
    for (int i = 0; i < enc->num_refs; i++) {
        if (enc->refs[i].surface == pic->CurrPic.picture_id) {
            memmove(&enc->refs[i], &enc->refs[i + 1], sizeof(enc->refs[0]) * (size_t)(enc->num_refs - i - 1));
            enc->num_refs--;
            break;
        }
    }
    if (!pic->pic_fields.bits.reference_pic_flag && !pic->pic_fields.bits.idr_pic_flag)
        return;
    if (enc->num_refs == MAX_RECONSTRUCTED) {
        memmove(&enc->refs[0], &enc->refs[1], sizeof(enc->refs[0]) * (MAX_RECONSTRUCTED - 1));
        enc->num_refs--;
    }
    enc->refs[enc->num_refs++] = (struct reconstructed){ pic->CurrPic.picture_id, pic->CurrPic.TopFieldOrderCnt,
                                                         pic->frame_num };
}

/* ---------- the parameter log ---------- */

static int cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void append_poc(char *buf, size_t size, int first, int32_t poc)
{
    size_t used = strlen(buf);
    if (used + 1 < size)
        snprintf(buf + used, size - used, first ? "%d" : ",%d", poc);
}

static void log_picture(const struct h264_encoder *enc, const struct enc_hooks *hooks)
{
    const VAEncPictureParameterBufferH264 *pic = &enc->pic;
    const VAEncSliceParameterBufferH264 *first = &enc->slices[0];
    static const char *types[] = { "P", "B", "I", "SP", "SI" };
    char refs[256] = "", lists[2][256] = { "", "" };
    int32_t pocs[16];
    int n = 0;
    for (int i = 0; i < 16; i++)
        if (valid_picture(&pic->ReferenceFrames[i]))
            pocs[n++] = pic->ReferenceFrames[i].TopFieldOrderCnt - enc->idr_poc;
    qsort(pocs, (size_t)n, sizeof(pocs[0]), cmp_int32);
    for (int i = 0; i < n; i++)
        append_poc(refs, sizeof(refs), i == 0, pocs[i]);
    for (int list = 0; list < 2; list++) {
        int count = active_refs(pic, first, list);
        const VAPictureH264 *entries = list ? first->RefPicList1 : first->RefPicList0;
        for (int i = 0; i < count && i < 32; i++) {
            if (valid_picture(&entries[i]))
                append_poc(lists[list], sizeof(lists[list]), i == 0, entries[i].TopFieldOrderCnt - enc->idr_poc);
            else
                snprintf(lists[list] + strlen(lists[list]), sizeof(lists[list]) - strlen(lists[list]), "%s-",
                         i ? "," : "");
        }
    }
    paramlog(hooks, "encpic type=%s idr=%u ref=%u frame_num=%u poc=%d entropy=%s qp=%d refs=%s l0=%s l1=%s",
             types[first->slice_type % 5], pic->pic_fields.bits.idr_pic_flag, pic->pic_fields.bits.reference_pic_flag != 0,
             pic->frame_num, pic->CurrPic.TopFieldOrderCnt - enc->idr_poc,
             pic->pic_fields.bits.entropy_coding_mode_flag ? "cabac" : "cavlc",
             pic->pic_init_qp + (enc->quirks.qp_from_pic_init_only ? 0 : first->slice_qp_delta),
             n ? refs : "-", lists[0][0] ? lists[0] : "-", lists[1][0] ? lists[1] : "-");
}

/* ---------- vaEndPicture ---------- */

/* The parameter sets the driver writes itself at an IDR: an SPS when the config has no packed
 * sequence header and the picture brought no SPS, a PPS when the config has no packed picture
 * header and the picture brought no PPS (also at other pictures, when the PPS changed). */
static void append_driver_sps(const struct h264_encoder *enc, struct bytes *out)
{
    uint8_t rbsp[2048];
    struct bitwriter bw;
    VAEncSequenceParameterBufferH264 seq = enc->seq;
    if (enc->quirks.sps_without_vui)
        seq.vui_parameters_present_flag = 0;
    bw_init(&bw, rbsp, sizeof(rbsp));
    h264_write_enc_sps(&bw, enc->profile, &seq);
    if (bw.overflow)
        out->failed = 1;
    else
        append_rbsp_nal(out, rbsp, bw_bytes(&bw));
}

static void write_parameter_sets(struct h264_encoder *enc, int has_sps, int has_pps, struct bytes *out)
{
    int idr = enc->pic.pic_fields.bits.idr_pic_flag;
    uint8_t rbsp[2048];
    struct bitwriter bw;
    if (idr && !has_sps && !(enc->packed_headers & VA_ENC_PACKED_HEADER_SEQUENCE))
        append_driver_sps(enc, out);
    if (!has_pps && !(enc->packed_headers & VA_ENC_PACKED_HEADER_PICTURE)) {
        bw_init(&bw, rbsp, sizeof(enc->written_pps));
        h264_write_enc_pps(&bw, enc->profile, &enc->pic);
        size_t size = bw_bytes(&bw);
        if (bw.overflow) {
            out->failed = 1;
        } else if (idr || size != enc->written_pps_size || memcmp(rbsp, enc->written_pps, size) != 0) {
            append_rbsp_nal(out, rbsp, size);
            memcpy(enc->written_pps, rbsp, size);
            enc->written_pps_size = size;
        }
    }
}

static void copy_surface(struct enc_surface *dst, const struct enc_surface *src)
{
    if (dst->data == src->data)
        return;
    uint32_t width = dst->pitch < src->pitch ? dst->pitch : src->pitch;
    uint32_t rows = dst->alloc_height < src->alloc_height ? dst->alloc_height : src->alloc_height;
    for (uint32_t y = 0; y < rows; y++)
        memcpy(dst->data + (size_t)y * dst->pitch, src->data + (size_t)y * src->pitch, width);
    uint8_t *dst_chroma = dst->data + (size_t)dst->pitch * dst->alloc_height;
    const uint8_t *src_chroma = src->data + (size_t)src->pitch * src->alloc_height;
    for (uint32_t y = 0; y < rows / 2; y++)
        memcpy(dst_chroma + (size_t)y * dst->pitch, src_chroma + (size_t)y * src->pitch, width);
}

/* Puts the bitstream into the coded buffer: one segment, truncated (and flagged) when it does not fit. */
static void fill_coded_buffer(struct h264_encoder *enc, const struct enc_hooks *hooks, const struct enc_picture_input *in,
                              const struct bytes *stream)
{
    struct enc_coded *coded = in->coded;
    size_t size = in->discard_output ? 0 : stream->size;
    uint32_t status = in->injected_status;
    if (size > coded->capacity) {
        hook_report(hooks, 1, "swiftvt_sw ENCODE overflow: picture %ld needs %zu bytes, the coded buffer holds %zu; "
                              "truncated (VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK)", enc->pictures, size,
                    coded->capacity);
        size = coded->capacity;
        status |= VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK;
    }
    if (size)
        memcpy(coded->data, stream->data, size);
    memset(coded->segment, 0, sizeof(*coded->segment));
    coded->segment->size = (uint32_t)size;
    coded->segment->bit_offset = 0;
    coded->segment->status = status;
    coded->segment->buf = coded->data;
    coded->segment->next = NULL;
}

/* The packed headers in submission order, into body; the k-th packed slice header goes with the
 * k-th slice parameter buffer. Returns how many packed slice headers there were; *has_sps and
 * *has_pps tell whether the client sent parameter sets; *insert_at is where the driver's own
 * parameter sets go: after an access unit delimiter if the client's first NAL unit is one
 * (7.4.1.2.3), else at the start. */
static int write_packed_headers(struct h264_encoder *enc, struct checker *c, const struct enc_surface *source,
                                struct bytes *body, int *has_sps, int *has_pps, size_t *insert_at)
{
    int packed_slices = 0;
    for (int i = 0; i < enc->num_packed; i++) {
        const struct packed_header *ph = &enc->packed[i];
        int is_slice = ph->type == VAEncPackedHeaderSlice;
        struct nal_span spans[16];
        int n = split_nal_units(ph, !is_slice, spans, 16);
        if (n < 0) {
            complain(c, "packed header %d (type %u, %u bits): no Annex B start code (00 00 01 after at least two zero "
                        "bytes) at the start of the data, or an empty NAL unit", i, ph->type, ph->bit_length);
            continue;
        }
        for (int k = 0; k < n; k++) {
            const uint8_t *nal = ph->data + spans[k].start;
            if (is_slice && k == n - 1) {
                if (packed_slices >= enc->num_slices)
                    complain(c, "packed slice header %d: only %d slice parameter buffer(s)", packed_slices + 1,
                             enc->num_slices);
                else
                    write_slice(enc, c, packed_slices, ph, &spans[k], source, body);
                packed_slices++;
                continue;
            }
            *has_sps |= (nal[0] & 0x1f) == 7;
            *has_pps |= (nal[0] & 0x1f) == 8;
            read_parameter_set(enc, c, nal, spans[k].size);
            if ((nal[0] & 0x1f) == 7 && enc->quirks.sps_without_vui)
                append_driver_sps(enc, body); /* the client's SPS is read, then regenerated (Mesa) */
            else if (ph->has_emulation_bytes)
                append_nal(body, nal, spans[k].size);
            else
                append_rbsp_nal(body, nal, spans[k].size);
            if (i == 0 && k == 0 && (nal[0] & 0x1f) == 9) /* access_unit_delimiter_rbsp */
                *insert_at = body->size;
        }
    }
    return packed_slices;
}

/* SWIFTVT_VA_TAMPER: a simulated client bug, to show that the checks catch it. */
static void tamper(struct h264_encoder *enc, unsigned what)
{
    if ((what & ENCODE_TAMPER_FRAME_NUM) && !enc->pic.pic_fields.bits.idr_pic_flag)
        enc->pic.frame_num++;
    if (what & ENCODE_TAMPER_REF_LIST) {
        for (int s = 0; s < enc->num_slices; s++) {
            uint32_t type = enc->slices[s].slice_type % 5;
            if (type == SLICE_P || type == SLICE_B)
                enc->slices[s].RefPicList0[0] = enc->pic.CurrPic;
        }
    }
}

/* Checks what the picture needs before anything is written; 0 when it can be encoded. */
static int picture_complete(const struct h264_encoder *enc, const struct enc_hooks *hooks,
                            const struct enc_picture_input *in)
{
    if (!enc->have_seq || !enc->have_pic || enc->num_slices == 0 || enc->have_packed_param) {
        hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: client %s, driver a sequence and a picture "
                              "parameter buffer and slice parameters", enc->pictures,
                    !enc->have_seq ? "no sequence parameter buffer yet" : !enc->have_pic ? "no picture parameter buffer"
                    : enc->num_slices == 0 ? "no slice parameters" : "a packed header parameter buffer without data");
        return 0;
    }
    if (!in->reconstructed || !in->coded) {
        hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: %s %#x is not a %s", enc->pictures,
                    !in->reconstructed ? "CurrPic.picture_id" : "coded_buf",
                    !in->reconstructed ? enc->pic.CurrPic.picture_id : enc->pic.coded_buf,
                    !in->reconstructed ? "surface" : "coded buffer (VAEncCodedBufferType)");
        return 0;
    }
    const VAEncSequenceParameterBufferH264 *seq = &enc->seq;
    uint32_t width = seq->picture_width_in_mbs * 16u, height = seq->picture_height_in_mbs * 16u;
    const struct enc_surface *surfaces[2] = { in->source, in->reconstructed };
    for (int i = 0; i < 2; i++) {
        if (width > surfaces[i]->pitch || height > surfaces[i]->alloc_height) {
            hook_report(hooks, 1, "swiftvt_sw VALIDATION: encode picture %ld: the %s surface holds %ux%u samples, the "
                                  "sequence has %ux%u macroblocks (%ux%u)", enc->pictures,
                        i ? "reconstructed" : "source", surfaces[i]->pitch, surfaces[i]->alloc_height,
                        seq->picture_width_in_mbs, seq->picture_height_in_mbs, width, height);
            return 0;
        }
    }
    return 1;
}

VAStatus h264_encoder_end(struct h264_encoder *enc, const struct enc_hooks *hooks, const struct enc_picture_input *in)
{
    struct checker c = { enc, hooks, 0 };
    struct bytes body = { 0 }, slices = { 0 }, sets = { 0 }, stream = { 0 };
    VAStatus status = VA_STATUS_SUCCESS;
    if (enc->refused || !picture_complete(enc, hooks, in)) {
        /* Nothing encoded; a refusal was reported by vaRenderPicture. */
        if (in->coded)
            fill_coded_buffer(enc, hooks, in, &stream);
        enc->pictures++;
        clear_picture(enc);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    if (enc->cabac_pending) {
        /* ENC_CABAC_REFUSED_AT_END: nothing was said at vaRenderPicture. */
        enc->cabac_pending = 0;
        refuse(enc, hooks, "CABAC (entropy_coding_mode_flag 1), at vaEndPicture (personality); this driver encodes "
                           "CAVLC only");
        fill_coded_buffer(enc, hooks, in, &stream);
        enc->pictures++;
        clear_picture(enc);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    tamper(enc, in->tamper);
    const VAEncPictureParameterBufferH264 *pic = &enc->pic;
    if (pic->pic_fields.bits.idr_pic_flag) {
        enc->num_refs = 0;
        enc->idr_poc = pic->CurrPic.TopFieldOrderCnt;
    }
    int coverage_ok = check_slice_coverage(enc, &c);
    check_references(enc, &c);
    if (coverage_ok) {
        int has_sps = 0, has_pps = 0;
        size_t insert_at = 0;
        int packed_slices = write_packed_headers(enc, &c, in->source, &body, &has_sps, &has_pps, &insert_at);
        for (int s = packed_slices; s < enc->num_slices; s++)
            write_slice(enc, &c, s, NULL, NULL, in->source, &slices);
        write_parameter_sets(enc, has_sps, has_pps, &sets);
        /* [AUD] + the driver's parameter sets + the packed headers and their slices + the other slices. */
        bytes_append(&stream, body.data, insert_at);
        bytes_append(&stream, sets.data, sets.size);
        bytes_append(&stream, body.data + insert_at, body.size - insert_at);
        bytes_append(&stream, slices.data, slices.size);
        if (body.failed || slices.failed || sets.failed || stream.failed) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            stream.size = 0;
        }
    }
    if (c.count)
        status = VA_STATUS_ERROR_ENCODING_ERROR;
    /* Whatever the complaints, the coded buffer holds what was written and the reconstruction
     * (lossless: the source) is in place, so later pictures still have their references. */
    fill_coded_buffer(enc, hooks, in, &stream);
    copy_surface(in->reconstructed, in->source);
    remember_reconstruction(enc);
    log_picture(enc, hooks);
    static const char *types[] = { "P", "B", "I", "SP", "SI" };
    hook_log(hooks, "encode picture %ld: poc %d frame_num %u %s%s, %d slice(s), %zu bytes (coded buffer %zu), "
                    "%d complaint(s)%s", enc->pictures, pic->CurrPic.TopFieldOrderCnt - enc->idr_poc, pic->frame_num,
             pic->pic_fields.bits.idr_pic_flag ? "IDR " : "", types[enc->slices[0].slice_type % 5], enc->num_slices,
             stream.size, in->coded->capacity, c.count,
             in->discard_output ? " (output discarded: SWIFTVT_VA_FAIL_END_PICTURE)" : "");
    enc->pictures++;
    free(body.data);
    free(slices.data);
    free(sets.data);
    free(stream.data);
    clear_picture(enc);
    return status;
}
