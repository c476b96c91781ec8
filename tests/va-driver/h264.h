/* The H.264 knowledge of the software VA driver: slice header parsing (7.3.3), SPS/PPS rebuilding
 * from VA parameters (7.3.2.1, 7.3.2.2), and the independent reference model used to validate
 * clients: POC (8.2.1), reference list construction (8.2.4) and marking (8.2.5). Progressive
 * frames only: the driver refuses field pictures and MBAFF before any of this runs. */
#ifndef SWIFTVT_SW_H264_H
#define SWIFTVT_SW_H264_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <va/va.h>
#include <va/va_enc_h264.h>

enum { SLICE_P = 0, SLICE_B = 1, SLICE_I = 2, SLICE_SP = 3, SLICE_SI = 4 };

#define H264_MAX_REFS 32     /* num_ref_idx_lX_active_minus1 <= 31 (7.4.3) */
#define H264_MAX_MMCO 64     /* far more than a frame DPB (16 frames) can use */
#define H264_MAX_DPB 16
#define H264_POC1_TABLE 4096 /* absFrameNum values whose expectedPicOrderCnt the model remembers */

/* The sequence and picture parameter set fields a slice header parse depends on (7.3.3), taken
 * from VAPictureParameterBufferH264. */
struct h264_params {
    int log2_max_frame_num;
    int poc_type;
    int log2_max_poc_lsb;
    int frame_mbs_only;
    int delta_pic_order_always_zero;
    int bottom_field_pic_order_in_frame_present;
    int redundant_pic_cnt_present;
    int weighted_pred;
    int weighted_bipred_idc;
    int entropy_coding_mode;
    int deblocking_filter_control_present;
    int chroma_array_type;
    int max_num_ref_frames;
    int gaps_allowed;
    /* num_ref_idx_lX_default_active_minus1 + 1: VA does not carry the PPS defaults, so the caller
     * passes the client's effective counts; they are used only when the slice does not override. */
    int num_ref_idx_default[2];
};

struct h264_mod_op {
    uint32_t idc;   /* modification_of_pic_nums_idc */
    uint32_t value; /* abs_diff_pic_num_minus1 or long_term_pic_num */
};

struct h264_mmco {
    uint32_t op;
    uint32_t difference_of_pic_nums_minus1;
    uint32_t long_term_pic_num;
    uint32_t long_term_frame_idx;
    uint32_t max_long_term_frame_idx_plus1;
};

struct h264_slice_header {
    uint8_t nal_ref_idc;
    uint8_t nal_unit_type;
    uint32_t first_mb_in_slice;
    uint32_t slice_type_raw;  /* 0..9 as coded */
    uint32_t slice_type;      /* slice_type % 5 */
    uint32_t pps_id;
    uint32_t frame_num;
    int field_pic_flag;
    uint32_t idr_pic_id;
    uint32_t pic_order_cnt_lsb;
    int32_t delta_pic_order_cnt_bottom;
    int32_t delta_pic_order_cnt[2];
    uint32_t redundant_pic_cnt;
    int direct_spatial_mv_pred_flag;
    int num_ref_idx_active_override_flag;
    int num_ref_idx_active[2]; /* effective, 0 when the list is unused by this slice type */
    int modification_flag[2];
    int num_mod_ops[2];
    struct h264_mod_op mod_ops[2][H264_MAX_REFS + 1];
    int explicit_weights;     /* pred_weight_table() present */
    uint32_t luma_log2_weight_denom;
    uint32_t chroma_log2_weight_denom;
    /* Effective weights (7.4.3.2: inferred 2^denom and 0 where a flag is 0). */
    int luma_weight_flag[2][H264_MAX_REFS];
    int chroma_weight_flag[2][H264_MAX_REFS];
    int32_t luma_weight[2][H264_MAX_REFS];
    int32_t luma_offset[2][H264_MAX_REFS];
    int32_t chroma_weight[2][H264_MAX_REFS][2];
    int32_t chroma_offset[2][H264_MAX_REFS][2];
    int no_output_of_prior_pics_flag;
    int long_term_reference_flag;
    int adaptive_ref_pic_marking_mode_flag;
    int num_mmco;
    struct h264_mmco mmco[H264_MAX_MMCO];
    uint32_t cabac_init_idc;
    int32_t slice_qp_delta;
    int32_t slice_qs_delta;
    /* Where the picture order count fields (pic_order_cnt_lsb .. delta_pic_order_cnt[1], 7.3.3)
     * are, in bits of the RBSP after the NAL unit header byte: [poc_bits_start, poc_bits_end).
     * Empty when the slice has none (pic_order_cnt_type 1 with delta_pic_order_always_zero_flag). */
    uint32_t poc_bits_start;
    uint32_t poc_bits_end;
    uint32_t disable_deblocking_filter_idc;
    int32_t slice_alpha_c0_offset_div2;
    int32_t slice_beta_offset_div2;
    /* slice_data_bit_offset as libva defines it (va.h): bits of slice_header() after removal of the
     * emulation prevention bytes, counting the NAL unit header byte. */
    uint32_t header_bits;
    char error[128];
};

/* Parses the NAL unit header and slice_header() (7.3.1, 7.3.3) of one slice NAL unit (escaped, as
 * it is in the slice data buffer). Returns 0, or -1 with sh->error set. */
int h264_parse_slice_header(const uint8_t *nal, size_t size, const struct h264_params *params,
                            struct h264_slice_header *sh);

void h264_params_from_va(const VAPictureParameterBufferH264 *pp, struct h264_params *params);

/* Rebuilt parameter sets: SPS id 0, the PPS with the id the slices use. */
struct h264_rebuild_input {
    VAProfile profile;
    const VAPictureParameterBufferH264 *pp;
    const VAIQMatrixBufferH264 *iq; /* NULL: flat */
    uint32_t pps_id;
    int num_ref_idx_default[2];     /* 1..32 */
};

/* A pic_order_cnt_type 1 sequence is rebuilt as pic_order_cnt_type 0: its SPS fields
 * (offset_for_non_ref_pic, offset_for_top_to_bottom_field, offset_for_ref_frame[]) are not in VA
 * parameters, but the client's POCs are (CurrPic.TopFieldOrderCnt/BottomFieldOrderCnt). The
 * rebuilt SPS says type 0 with the largest pic_order_cnt_lsb (16 bits, 7.4.2.1.1), the PPS says
 * bottom_field_pic_order_in_frame_present_flag 1, and every slice gets pic_order_cnt_lsb and
 * delta_pic_order_cnt_bottom in place of its delta_pic_order_cnt[] (h264_rewrite_slice_poc). */
#define H264_REWRITTEN_LOG2_MAX_POC_LSB 16

/* Whether the rebuilt parameter sets rewrite pic_order_cnt_type 1 into type 0 (see above). */
int h264_rebuild_rewrites_poc(const VAPictureParameterBufferH264 *pp);

/* Rewrites one slice NAL unit (escaped, header byte first) of a pic_order_cnt_type 1 sequence
 * for the rebuilt type-0 SPS and PPS: the bits from sh->poc_bits_start to sh->poc_bits_end are
 * replaced by pic_order_cnt_lsb u(16) and delta_pic_order_cnt_bottom se(v); the rest of the
 * header is copied, then slice_data(), re-aligned for CABAC (cabac_alignment_one_bit, 7.3.4).
 * Returns the new NAL unit (malloc'd, escaped) and its size in *out_size, or NULL. */
uint8_t *h264_rewrite_slice_poc(const uint8_t *nal, size_t size, const struct h264_slice_header *sh, int cabac,
                                uint32_t pic_order_cnt_lsb, int32_t delta_pic_order_cnt_bottom, size_t *out_size);

/* Writes the SPS / PPS NAL units (header byte included, escaped, no start code). Return the size,
 * or 0 when out is too small. */
size_t h264_build_sps(const struct h264_rebuild_input *in, uint8_t *out, size_t capacity);
size_t h264_build_pps(const struct h264_rebuild_input *in, uint8_t *out, size_t capacity);
/* Whether the IQ matrix differs from Flat_4x4_16/Flat_8x8_16 in the lists this PPS uses. */
int h264_iq_is_flat(const VAIQMatrixBufferH264 *iq, int transform_8x8_mode_flag);

/* ----- The reference model (h264_refs.c) ----- */

struct h264_dpb_pic {
    VASurfaceID surface;       /* VA_INVALID_SURFACE for frames inferred from a frame_num gap */
    int non_existing;
    uint32_t frame_num;
    int32_t frame_num_wrap;
    int32_t top_poc;
    int32_t bottom_poc;
    int long_term;
    uint32_t long_term_frame_idx;
};

struct h264_refs {
    int started;               /* an IDR was seen: the state below is meaningful */
    struct h264_dpb_pic dpb[H264_MAX_DPB + 1];
    int num_dpb;
    int max_long_term_frame_idx; /* -1: "no long-term frame indices" */
    /* POC state (8.2.1). */
    int32_t prev_poc_msb;
    int32_t prev_poc_lsb;
    uint32_t prev_frame_num;
    int32_t prev_frame_num_offset;
    uint32_t prev_ref_frame_num;
    int prev_had_mmco5;
    /* Clients may add a constant to every POC of a coded video sequence (FFmpeg adds 65536): only
     * differences of POCs matter to a decoder (8.2.1: DiffPicOrderCnt). The offset is learnt from
     * CurrPic at each IDR (or after memory_management_control_operation 5) and every later POC is
     * compared after subtracting it. */
    int32_t client_poc_offset;
    /* pic_order_cnt_type 1 (8.2.1.2): the SPS offsets are not in VA parameters, so the model
     * learns them from the client and checks that later pictures agree. expectedPicOrderCnt of a
     * reference picture depends only on absFrameNum (the same in every coded video sequence of
     * the SPS); a non-reference picture adds offset_for_non_ref_pic; the bottom field adds
     * offset_for_top_to_bottom_field. Forgotten when the sequence parameters change. */
    struct {
        uint8_t known[H264_POC1_TABLE];
        int32_t expected[H264_POC1_TABLE];  /* expectedPicOrderCnt of a reference picture, by absFrameNum */
        int non_ref_known, top_to_bottom_known;
        int32_t offset_for_non_ref_pic;
        int32_t offset_for_top_to_bottom_field;
    } poc1;
};

/* Forgets what was learnt about a pic_order_cnt_type 1 SPS (a new SPS is active). */
void h264_refs_forget_poc_type1(struct h264_refs *refs);

/* One picture's POC as the model derives it (8.2.1). */
struct h264_pic_info {
    int32_t top_poc;
    int32_t bottom_poc;
    int32_t poc_msb;           /* PicOrderCntMsb, type 0 */
    int32_t frame_num_offset;  /* FrameNumOffset, type 2 */
    int idr;
    int reference;
};

/* A complaint: "<field>: client <x>, driver <y>". */
typedef void (*h264_complain_fn)(void *opaque, const char *field, const char *client, const char *driver);

struct h264_check_input {
    const struct h264_params *params;
    const VAPictureParameterBufferH264 *pp;
    const struct h264_slice_header *headers;      /* one per slice */
    const VASliceParameterBufferH264 *slices;     /* the client's, one per slice */
    int num_slices;
    VASurfaceID target;
    FILE *paramlog;                               /* NULL: no log */
    /* The driver builds its reference lists from ReferenceFrames alone (NVDEC, AMD): frames
     * inferred from a frame_num gap must be there too, as real surfaces with their frame_idx. */
    int gap_frames_required;
};

/* Validates one picture against the model before it is decoded; reports each mismatch through
 * complain and returns how many there were. Fills info with the model's POC. */
int h264_check_picture(struct h264_refs *refs, const struct h264_check_input *in, struct h264_pic_info *info,
                       h264_complain_fn complain, void *opaque);

/* Decoded reference picture marking (8.2.5) of the picture just decoded, and the POC/frame_num
 * state its successors need. */
void h264_mark_picture(struct h264_refs *refs, const struct h264_params *params,
                       const struct h264_slice_header *sh, const struct h264_pic_info *info, VASurfaceID target);

/* ----- Parameter sets as a client sent them (h264_ps.c), for the encoder's validation ----- */

/* The fields of a seq_parameter_set_data() (7.3.2.1.1) up to vui_parameters_present_flag. */
struct h264_sps_info {
    uint32_t profile_idc;
    uint32_t constraint_flags;  /* constraint_set0_flag .. reserved_zero_2bits, as one byte */
    uint32_t level_idc;
    uint32_t sps_id;
    uint32_t chroma_format_idc;
    uint32_t bit_depth_luma_minus8;
    uint32_t bit_depth_chroma_minus8;
    uint32_t log2_max_frame_num;
    uint32_t poc_type;
    uint32_t log2_max_poc_lsb;
    int delta_pic_order_always_zero;
    uint32_t max_num_ref_frames;
    int gaps_allowed;
    uint32_t width_mbs;
    uint32_t height_map_units;
    int frame_mbs_only;
    int direct_8x8_inference;
    int frame_cropping;
    uint32_t crop[4];           /* left, right, top, bottom */
    int vui_present;
};

/* The fields of a pic_parameter_set_rbsp() (7.3.2.2) up to pic_scaling_matrix_present_flag. */
struct h264_pps_info {
    uint32_t pps_id;
    uint32_t sps_id;
    int entropy_coding_mode;
    int bottom_field_pic_order_in_frame_present;
    uint32_t num_ref_idx_default[2]; /* num_ref_idx_lX_default_active_minus1 + 1 */
    int weighted_pred;
    uint32_t weighted_bipred_idc;
    int32_t pic_init_qp;
    int32_t chroma_qp_index_offset;
    int deblocking_filter_control_present;
    int constrained_intra_pred;
    int redundant_pic_cnt_present;
    int transform_8x8_mode;
    int pic_scaling_matrix_present;
};

/* Parse the RBSP (emulation prevention removed, NAL unit header excluded) of an SPS / PPS. Return
 * 0, or -1 with a reason in error (size bytes). */
int h264_parse_sps(const uint8_t *rbsp, size_t size, struct h264_sps_info *sps, char *error, size_t error_size);
int h264_parse_pps(const uint8_t *rbsp, size_t size, struct h264_pps_info *pps, char *error, size_t error_size);
/* The slice-header parsing parameters of an SPS and a PPS (7.3.3 depends on both). */
void h264_params_from_sets(const struct h264_sps_info *sps, const struct h264_pps_info *pps,
                           struct h264_params *params);

/* ----- Headers the encoder writes itself when the client sends no packed header (h264_enc_headers.c) ----- */

struct bitwriter;
/* Each writes the NAL unit header byte, then the syntax structure, into bw (an RBSP, not escaped).
 * SPS (7.3.2.1.1) with VUI (E.1.1) when vui_parameters_present_flag; PPS (7.3.2.2) ending in
 * rbsp_trailing_bits(); the slice header (7.3.3) without any alignment: slice_data() follows. */
void h264_write_enc_sps(struct bitwriter *bw, VAProfile profile, const VAEncSequenceParameterBufferH264 *seq);
void h264_write_enc_pps(struct bitwriter *bw, VAProfile profile, const VAEncPictureParameterBufferH264 *pic);
void h264_write_enc_slice_header(struct bitwriter *bw, const VAEncSequenceParameterBufferH264 *seq,
                                 const VAEncPictureParameterBufferH264 *pic,
                                 const VAEncSliceParameterBufferH264 *slice);
/* profile_idc of a VA H.264 profile (A.2): 66 for Constrained Baseline, 77 Main, 100 High. */
int h264_profile_idc(VAProfile profile);

#endif
