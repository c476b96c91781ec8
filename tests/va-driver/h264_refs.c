/* The software VA driver's independent reference model and the checks it runs on every picture a
 * client submits: picture order count (H.264 8.2.1; types 0 and 2 computed, type 1 learnt from the
 * client and checked for consistency, its SPS offsets not being in VA parameters), reference picture lists
 * (8.2.4, frames) and decoded reference picture marking (8.2.5, frames). The model is built from
 * the driver's own parse of the slice headers, never from the client's picture parameters, so
 * that a client error shows up as a difference. */
#include "h264.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VA_INVALID_PICTURE(p) (((p).flags & VA_PICTURE_H264_INVALID) || (p).picture_id == VA_INVALID_SURFACE)

static uint32_t max_frame_num(const struct h264_params *params)
{
    return 1u << params->log2_max_frame_num;
}

/* PicOrderCnt() of a frame (8-1): the smaller of its two field order counts. */
static int32_t frame_poc(int32_t top, int32_t bottom)
{
    return top < bottom ? top : bottom;
}

/* ---------- 8.2.1 picture order count ---------- */

static void compute_poc(const struct h264_refs *refs, const struct h264_params *params,
                        const struct h264_slice_header *sh, struct h264_pic_info *info)
{
    info->idr = sh->nal_unit_type == 5;
    info->reference = sh->nal_ref_idc != 0;
    if (params->poc_type == 0) {
        /* 8.2.1.1. prevPicOrderCntMsb/Lsb were kept at the last reference picture's marking,
         * with the memory_management_control_operation 5 rule applied there. */
        int32_t prev_msb = info->idr ? 0 : refs->prev_poc_msb;
        int32_t prev_lsb = info->idr ? 0 : refs->prev_poc_lsb;
        int32_t max_lsb = 1 << params->log2_max_poc_lsb;
        int32_t lsb = (int32_t)sh->pic_order_cnt_lsb;
        int32_t msb;
        if (lsb < prev_lsb && prev_lsb - lsb >= max_lsb / 2)
            msb = prev_msb + max_lsb;
        else if (lsb > prev_lsb && lsb - prev_lsb > max_lsb / 2)
            msb = prev_msb - max_lsb;
        else
            msb = prev_msb;
        info->poc_msb = msb;
        info->top_poc = msb + lsb;
        info->bottom_poc = info->top_poc + sh->delta_pic_order_cnt_bottom;
    } else {
        /* FrameNumOffset: the same for type 1 (8.2.1.2) and type 2 (8.2.1.3). The rest of type 1
         * is resolve_poc_type1's, with the client's POC. */
        int32_t prev_offset = refs->prev_had_mmco5 ? 0 : refs->prev_frame_num_offset;
        int32_t offset;
        if (info->idr)
            offset = 0;
        else if (refs->prev_frame_num > sh->frame_num)
            offset = prev_offset + (int32_t)max_frame_num(params);
        else
            offset = prev_offset;
        info->frame_num_offset = offset;
        if (params->poc_type == 1)
            return;
        int32_t temp;
        if (info->idr)
            temp = 0;
        else if (sh->nal_ref_idc == 0)
            temp = 2 * (offset + (int32_t)sh->frame_num) - 1;
        else
            temp = 2 * (offset + (int32_t)sh->frame_num);
        info->top_poc = temp;
        info->bottom_poc = temp;
    }
}

void h264_refs_forget_poc_type1(struct h264_refs *refs)
{
    memset(&refs->poc1, 0, sizeof(refs->poc1));
}

/* 8.2.1.2 for a frame, with the SPS offsets the model does not know: the POC is
 * expectedPicOrderCnt(absFrameNum) + delta_pic_order_cnt[0], where a reference picture's
 * expectedPicOrderCnt depends only on absFrameNum (0 at an IDR picture), a non-reference
 * picture's is its predecessor's (absFrameNum - 1) plus offset_for_non_ref_pic, and the bottom
 * field adds offset_for_top_to_bottom_field + delta_pic_order_cnt[1]. What is known gives the
 * model's POC (and the client's offset at an IDR picture); what is not yet known is learnt from
 * the client's CurrPic, so that a later picture contradicting it is reported. */
static void resolve_poc_type1(struct h264_refs *refs, const struct h264_slice_header *sh,
                              const VAPictureParameterBufferH264 *pp, struct h264_pic_info *info, int relearn_offset)
{
    int64_t abs_frame_num = (int64_t)info->frame_num_offset + sh->frame_num;
    int reference = sh->nal_ref_idc != 0;
    if (!reference && abs_frame_num > 0)
        abs_frame_num--;
    int in_table = abs_frame_num >= 0 && abs_frame_num < H264_POC1_TABLE;
    int ref_known = abs_frame_num == 0 || (in_table && refs->poc1.known[abs_frame_num]);
    int32_t ref_expected = abs_frame_num == 0 ? 0 : ref_known ? refs->poc1.expected[abs_frame_num] : 0;
    int expected_known = ref_known && (reference || refs->poc1.non_ref_known);
    int32_t expected = ref_expected + (reference ? 0 : refs->poc1.offset_for_non_ref_pic);
    if (relearn_offset && expected_known)
        refs->client_poc_offset = pp->CurrPic.TopFieldOrderCnt - (expected + sh->delta_pic_order_cnt[0]);
    int32_t client_top = pp->CurrPic.TopFieldOrderCnt - refs->client_poc_offset;
    int32_t client_expected = client_top - sh->delta_pic_order_cnt[0];
    if (!expected_known) {
        if (reference && in_table) {
            refs->poc1.expected[abs_frame_num] = client_expected;
            refs->poc1.known[abs_frame_num] = 1;
        } else if (!reference && ref_known) {
            refs->poc1.offset_for_non_ref_pic = client_expected - ref_expected;
            refs->poc1.non_ref_known = 1;
        }
        expected = client_expected;
    }
    info->top_poc = expected + sh->delta_pic_order_cnt[0];
    int32_t client_step = pp->CurrPic.BottomFieldOrderCnt - pp->CurrPic.TopFieldOrderCnt - sh->delta_pic_order_cnt[1];
    if (!refs->poc1.top_to_bottom_known) {
        refs->poc1.offset_for_top_to_bottom_field = client_step;
        refs->poc1.top_to_bottom_known = 1;
    }
    info->bottom_poc = info->top_poc + refs->poc1.offset_for_top_to_bottom_field + sh->delta_pic_order_cnt[1];
}

/* ---------- 8.2.4.1 picture numbers ---------- */

static void update_frame_num_wrap(struct h264_refs *refs, const struct h264_params *params, uint32_t frame_num)
{
    for (int i = 0; i < refs->num_dpb; i++) {
        struct h264_dpb_pic *p = &refs->dpb[i];
        p->frame_num_wrap = p->frame_num > frame_num ? (int32_t)p->frame_num - (int32_t)max_frame_num(params)
                                                     : (int32_t)p->frame_num;
    }
}

static void dpb_remove(struct h264_refs *refs, int index)
{
    memmove(&refs->dpb[index], &refs->dpb[index + 1], sizeof(refs->dpb[0]) * (size_t)(refs->num_dpb - index - 1));
    refs->num_dpb--;
}

static int find_short(const struct h264_refs *refs, int32_t pic_num)
{
    for (int i = 0; i < refs->num_dpb; i++)
        if (!refs->dpb[i].long_term && refs->dpb[i].frame_num_wrap == pic_num)
            return i;
    return -1;
}

static int find_long(const struct h264_refs *refs, uint32_t long_term_pic_num)
{
    for (int i = 0; i < refs->num_dpb; i++)
        if (refs->dpb[i].long_term && refs->dpb[i].long_term_frame_idx == long_term_pic_num)
            return i;
    return -1;
}

/* ---------- 8.2.5.3 sliding window ---------- */

static void sliding_window(struct h264_refs *refs, const struct h264_params *params)
{
    int max_refs = params->max_num_ref_frames > 0 ? params->max_num_ref_frames : 1;
    while (refs->num_dpb >= max_refs) {
        int oldest = -1;
        for (int i = 0; i < refs->num_dpb; i++)
            if (!refs->dpb[i].long_term &&
                (oldest < 0 || refs->dpb[i].frame_num_wrap < refs->dpb[oldest].frame_num_wrap))
                oldest = i;
        if (oldest < 0)
            break; /* only long-term frames: a broken stream; nothing the window may remove */
        dpb_remove(refs, oldest);
    }
}

static void dpb_insert(struct h264_refs *refs, const struct h264_dpb_pic *pic)
{
    if (refs->num_dpb >= H264_MAX_DPB + 1)
        dpb_remove(refs, 0);
    refs->dpb[refs->num_dpb++] = *pic;
}

/* 8.2.5.2: frames "inferred" for a gap in frame_num; they take part in the sliding window and in
 * list initialisation but have no surface. */
static void fill_frame_num_gap(struct h264_refs *refs, const struct h264_params *params, uint32_t frame_num)
{
    uint32_t max = max_frame_num(params);
    if (frame_num == refs->prev_ref_frame_num || frame_num == (refs->prev_ref_frame_num + 1) % max)
        return;
    uint32_t unused = (refs->prev_ref_frame_num + 1) % max;
    for (int guard = 0; unused != frame_num && guard < 65536; guard++) {
        update_frame_num_wrap(refs, params, unused);
        sliding_window(refs, params);
        struct h264_dpb_pic pic = { .surface = VA_INVALID_SURFACE, .non_existing = 1, .frame_num = unused,
                                    .frame_num_wrap = (int32_t)unused };
        dpb_insert(refs, &pic);
        if (params->poc_type != 0) {
            if (refs->prev_frame_num > unused)
                refs->prev_frame_num_offset += (int32_t)max;
        }
        refs->prev_frame_num = unused;
        refs->prev_ref_frame_num = unused;
        refs->prev_had_mmco5 = 0;
        unused = (unused + 1) % max;
    }
}

/* ---------- 8.2.4.2 and 8.2.4.3 reference picture lists ---------- */

struct ref_list {
    const struct h264_dpb_pic *entry[H264_MAX_REFS + 1]; /* NULL: "no reference picture" */
    int init_length;                                     /* entries from initialisation */
};

/* Orders of 8.2.4.2.1 and 8.2.4.2.3. */
enum order { PIC_NUM_DESC, LONG_TERM_PIC_NUM_ASC, POC_DESC, POC_ASC };

static int precedes(const struct h264_dpb_pic *x, const struct h264_dpb_pic *y, enum order order)
{
    int32_t px = frame_poc(x->top_poc, x->bottom_poc), py = frame_poc(y->top_poc, y->bottom_poc);
    switch (order) {
    case PIC_NUM_DESC: return x->frame_num_wrap > y->frame_num_wrap;
    case LONG_TERM_PIC_NUM_ASC: return x->long_term_frame_idx < y->long_term_frame_idx;
    case POC_DESC: return px > py;
    case POC_ASC: return px < py;
    }
    return 0;
}

/* Appends the reference frames of one kind (short- or long-term; for B lists only those before
 * (side < 0) or after (side > 0) the current POC) to out, sorted. Returns how many. */
static int collect(const struct h264_refs *refs, int long_term, int side, int32_t current_poc, enum order order,
                   const struct h264_dpb_pic **out)
{
    int n = 0;
    for (int i = 0; i < refs->num_dpb; i++) {
        const struct h264_dpb_pic *p = &refs->dpb[i];
        if (p->long_term != long_term)
            continue;
        if (side != 0) {
            int32_t poc = frame_poc(p->top_poc, p->bottom_poc);
            /* Frames inferred from a frame_num gap have no POC: not in B lists. */
            if (p->non_existing || (side < 0 ? poc >= current_poc : poc <= current_poc))
                continue;
        }
        int k = n++;
        while (k > 0 && precedes(p, out[k - 1], order)) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = p;
    }
    return n;
}

/* 8.2.4.2.1 (P frames) and 8.2.4.2.3 (B frames), before truncation. */
static void init_lists(const struct h264_refs *refs, const struct h264_slice_header *sh, int32_t current_poc,
                       struct ref_list lists[2])
{
    memset(lists, 0, sizeof(struct ref_list) * 2);
    const struct h264_dpb_pic *all[2][2 * (H264_MAX_DPB + 1)];
    int n[2] = { 0, 0 };
    if (sh->slice_type == SLICE_P || sh->slice_type == SLICE_SP) {
        n[0] = collect(refs, 0, 0, current_poc, PIC_NUM_DESC, all[0]);
        n[0] += collect(refs, 1, 0, current_poc, LONG_TERM_PIC_NUM_ASC, all[0] + n[0]);
    } else if (sh->slice_type == SLICE_B) {
        for (int list = 0; list < 2; list++) {
            int k = 0;
            if (list == 0) {
                k += collect(refs, 0, -1, current_poc, POC_DESC, all[list] + k);
                k += collect(refs, 0, +1, current_poc, POC_ASC, all[list] + k);
            } else {
                k += collect(refs, 0, +1, current_poc, POC_ASC, all[list] + k);
                k += collect(refs, 0, -1, current_poc, POC_DESC, all[list] + k);
            }
            k += collect(refs, 1, 0, current_poc, LONG_TERM_PIC_NUM_ASC, all[list] + k);
            n[list] = k;
        }
        /* 8.2.4.2.3: when RefPicList1 has more than one entry and equals RefPicList0, its first two
         * entries are swapped. */
        if (n[1] > 1 && n[0] == n[1] && memcmp(all[0], all[1], sizeof(all[0][0]) * (size_t)n[0]) == 0) {
            const struct h264_dpb_pic *t = all[1][0];
            all[1][0] = all[1][1];
            all[1][1] = t;
        }
    }
    for (int list = 0; list < 2; list++) {
        /* 8.2.4.2: entries past num_ref_idx_lX_active_minus1 are discarded. */
        int keep = n[list] < sh->num_ref_idx_active[list] ? n[list] : sh->num_ref_idx_active[list];
        for (int i = 0; i < keep; i++)
            lists[list].entry[i] = all[list][i];
        lists[list].init_length = keep;
    }
}

/* 8.2.4.3. Returns 0, or -1 when a modification names a picture that is not a reference. */
static int modify_list(const struct h264_refs *refs, const struct h264_params *params,
                       const struct h264_slice_header *sh, int list, struct ref_list *rl, char *why, size_t why_size)
{
    int num_active = sh->num_ref_idx_active[list];
    int32_t max_pic_num = (int32_t)max_frame_num(params); /* MaxPicNum for frames */
    int32_t curr_pic_num = (int32_t)sh->frame_num;
    int32_t pred = curr_pic_num;
    int ref_idx = 0;
    for (int k = 0; k < sh->num_mod_ops[list] && ref_idx < num_active; k++) {
        const struct h264_mod_op *op = &sh->mod_ops[list][k];
        const struct h264_dpb_pic *pic = NULL;
        int is_long = 0;
        int32_t target = 0;
        if (op->idc == 0 || op->idc == 1) {
            /* 8.2.4.3.1 */
            int32_t abs_diff = (int32_t)op->value + 1;
            int32_t no_wrap;
            if (op->idc == 0) {
                no_wrap = pred - abs_diff;
                if (no_wrap < 0)
                    no_wrap += max_pic_num;
            } else {
                no_wrap = pred + abs_diff;
                if (no_wrap >= max_pic_num)
                    no_wrap -= max_pic_num;
            }
            pred = no_wrap;
            target = no_wrap > curr_pic_num ? no_wrap - max_pic_num : no_wrap;
            int index = find_short(refs, target);
            if (index < 0) {
                snprintf(why, why_size, "modification names short-term picNum %d, not a reference", target);
                return -1;
            }
            pic = &refs->dpb[index];
        } else {
            /* 8.2.4.3.2 */
            is_long = 1;
            target = (int32_t)op->value;
            int index = find_long(refs, op->value);
            if (index < 0) {
                snprintf(why, why_size, "modification names LongTermPicNum %u, not a reference", op->value);
                return -1;
            }
            pic = &refs->dpb[index];
        }
        /* Shift the list up by one from refIdx, insert, then drop the later copy of the picture. */
        for (int c = num_active; c > ref_idx; c--)
            rl->entry[c] = rl->entry[c - 1];
        rl->entry[ref_idx++] = pic;
        int n = ref_idx;
        for (int c = ref_idx; c <= num_active; c++) {
            const struct h264_dpb_pic *e = rl->entry[c];
            int same = e && e->long_term == is_long &&
                       (is_long ? (int32_t)e->long_term_frame_idx == target : e->frame_num_wrap == target);
            if (!same)
                rl->entry[n++] = e;
        }
        rl->entry[num_active] = NULL;
    }
    if (sh->num_mod_ops[list] > 0) {
        int length = 0;
        for (int i = 0; i < num_active; i++)
            if (rl->entry[i])
                length = i + 1;
        if (length > rl->init_length)
            rl->init_length = length;
    }
    return 0;
}

/* ---------- formatting ---------- */

static void append(char *buf, size_t size, const char *fmt, int32_t a, int32_t b)
{
    size_t used = strlen(buf);
    if (used + 1 < size)
        snprintf(buf + used, size - used, fmt, a, b);
}

static void format_va_pic(char *buf, size_t size, const VAPictureH264 *p, int32_t off)
{
    if (VA_INVALID_PICTURE(*p)) {
        snprintf(buf, size, "none");
        return;
    }
    snprintf(buf, size, "poc %d/%d%s surface %#x", p->TopFieldOrderCnt - off, p->BottomFieldOrderCnt - off,
             (p->flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) ? " long-term" : "", p->picture_id);
}

static void format_dpb_pic(char *buf, size_t size, const struct h264_dpb_pic *p)
{
    if (!p)
        snprintf(buf, size, "none");
    else if (p->non_existing)
        snprintf(buf, size, "non-existing frame_num %u", p->frame_num);
    else
        snprintf(buf, size, "poc %d/%d%s surface %#x", p->top_poc, p->bottom_poc, p->long_term ? " long-term" : "",
                 p->surface);
}

struct ref_entry {
    int32_t poc;
    uint32_t frame_idx;
    int long_term;
};

static int ref_entry_cmp(const void *a, const void *b)
{
    const struct ref_entry *x = a, *y = b;
    if (x->poc != y->poc)
        return (x->poc > y->poc) - (x->poc < y->poc);
    if (x->long_term != y->long_term)
        return x->long_term - y->long_term;
    return (x->frame_idx > y->frame_idx) - (x->frame_idx < y->frame_idx);
}

static void format_ref_set(char *buf, size_t size, struct ref_entry *entries, int n)
{
    qsort(entries, (size_t)n, sizeof(entries[0]), ref_entry_cmp);
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        append(buf, size, i ? ",%d" : "%d", entries[i].poc, 0);
        append(buf, size, entries[i].long_term ? "L:%d" : ":%d", (int32_t)entries[i].frame_idx, 0);
    }
    if (n == 0)
        snprintf(buf, size, "-");
}

static const char *slice_type_name(uint32_t type)
{
    static const char *names[] = { "P", "B", "I", "SP", "SI" };
    return type < 5 ? names[type] : "?";
}

/* ---------- the checks ---------- */

struct checker {
    h264_complain_fn complain;
    void *opaque;
    int count;
};

static void complain(struct checker *c, const char *field, const char *client, const char *driver)
{
    c->count++;
    c->complain(c->opaque, field, client, driver);
}

static void compare_int(struct checker *c, const char *field, long client, long driver)
{
    if (client == driver)
        return;
    char a[32], b[32];
    snprintf(a, sizeof(a), "%ld", client);
    snprintf(b, sizeof(b), "%ld", driver);
    complain(c, field, a, b);
}

/* The effective weights of the client for one list entry (flag 0: the inferred values). */
static void client_weights(const VASliceParameterBufferH264 *s, int list, int i, int32_t w[6])
{
    int luma_flag = list ? s->luma_weight_l1_flag : s->luma_weight_l0_flag;
    int chroma_flag = list ? s->chroma_weight_l1_flag : s->chroma_weight_l0_flag;
    w[0] = luma_flag ? (list ? s->luma_weight_l1[i] : s->luma_weight_l0[i]) : 1 << s->luma_log2_weight_denom;
    w[1] = luma_flag ? (list ? s->luma_offset_l1[i] : s->luma_offset_l0[i]) : 0;
    for (int j = 0; j < 2; j++) {
        w[2 + 2 * j] = chroma_flag ? (list ? s->chroma_weight_l1[i][j] : s->chroma_weight_l0[i][j])
                                   : 1 << s->chroma_log2_weight_denom;
        w[3 + 2 * j] = chroma_flag ? (list ? s->chroma_offset_l1[i][j] : s->chroma_offset_l0[i][j]) : 0;
    }
}

static void check_weights(struct checker *c, int index, const VASliceParameterBufferH264 *s,
                          const struct h264_slice_header *sh)
{
    char field[96];
    snprintf(field, sizeof(field), "slice[%d].luma_log2_weight_denom", index);
    compare_int(c, field, s->luma_log2_weight_denom, sh->luma_log2_weight_denom);
    snprintf(field, sizeof(field), "slice[%d].chroma_log2_weight_denom", index);
    compare_int(c, field, s->chroma_log2_weight_denom, sh->chroma_log2_weight_denom);
    int lists = sh->slice_type == SLICE_B ? 2 : 1;
    for (int list = 0; list < lists; list++) {
        for (int i = 0; i < sh->num_ref_idx_active[list]; i++) {
            int32_t w[6];
            client_weights(s, list, i, w);
            int32_t d[6] = { sh->luma_weight[list][i], sh->luma_offset[list][i], sh->chroma_weight[list][i][0],
                             sh->chroma_offset[list][i][0], sh->chroma_weight[list][i][1], sh->chroma_offset[list][i][1] };
            if (memcmp(w, d, sizeof(w)) != 0) {
                char a[96], b[96];
                snprintf(field, sizeof(field), "slice[%d].weights_l%d[%d] (luma w,o chroma w,o,w,o)", index, list, i);
                snprintf(a, sizeof(a), "%d,%d %d,%d,%d,%d", w[0], w[1], w[2], w[3], w[4], w[5]);
                snprintf(b, sizeof(b), "%d,%d %d,%d,%d,%d", d[0], d[1], d[2], d[3], d[4], d[5]);
                complain(c, field, a, b);
            }
        }
    }
}

static int in_client_refs(const VAPictureParameterBufferH264 *pp, const VAPictureH264 *p)
{
    for (int i = 0; i < 16; i++) {
        const VAPictureH264 *r = &pp->ReferenceFrames[i];
        if (!VA_INVALID_PICTURE(*r) && r->picture_id == p->picture_id && r->TopFieldOrderCnt == p->TopFieldOrderCnt &&
            r->BottomFieldOrderCnt == p->BottomFieldOrderCnt)
            return 1;
    }
    return 0;
}

static void check_gap_frames(struct checker *c, const struct h264_refs *refs, const VAPictureParameterBufferH264 *pp)
{
    for (int k = 0; k < refs->num_dpb; k++) {
        const struct h264_dpb_pic *p = &refs->dpb[k];
        if (!p->non_existing)
            continue;
        int found = 0;
        for (int i = 0; i < 16 && !found; i++)
            found = !VA_INVALID_PICTURE(pp->ReferenceFrames[i]) && pp->ReferenceFrames[i].frame_idx == p->frame_num &&
                    !(pp->ReferenceFrames[i].flags & VA_PICTURE_H264_LONG_TERM_REFERENCE);
        if (!found) {
            char b[160];
            snprintf(b, sizeof(b), "frame_num %u (inferred from a frame_num gap, 8.2.5.2) as a surface: this driver "
                                   "builds its reference lists from ReferenceFrames alone", p->frame_num);
            complain(c, "ReferenceFrames (frame_num gap)", "no entry", b);
        }
    }
}

static void check_reference_frames(struct checker *c, const struct h264_refs *refs,
                                   const VAPictureParameterBufferH264 *pp)
{
    const int32_t off = refs->client_poc_offset;
    int client_used[16] = { 0 };
    int ok = 1;
    for (int i = 0; i < 16; i++) {
        const VAPictureH264 *r = &pp->ReferenceFrames[i];
        if (VA_INVALID_PICTURE(*r))
            continue;
        for (int j = 0; j < i; j++)
            if (!VA_INVALID_PICTURE(pp->ReferenceFrames[j]) && pp->ReferenceFrames[j].picture_id == r->picture_id)
                ok = 0; /* the same surface twice */
    }
    for (int k = 0; k < refs->num_dpb; k++) {
        const struct h264_dpb_pic *p = &refs->dpb[k];
        if (p->non_existing)
            continue;
        int found = 0;
        for (int i = 0; i < 16 && !found; i++) {
            const VAPictureH264 *r = &pp->ReferenceFrames[i];
            if (VA_INVALID_PICTURE(*r) || r->picture_id != p->surface)
                continue;
            found = 1;
            client_used[i] = 1;
            int long_term = (r->flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) != 0;
            uint32_t frame_idx = p->long_term ? p->long_term_frame_idx : p->frame_num;
            if (r->TopFieldOrderCnt - off != p->top_poc || r->BottomFieldOrderCnt - off != p->bottom_poc ||
                long_term != p->long_term || r->frame_idx != frame_idx ||
                (r->flags & (VA_PICTURE_H264_TOP_FIELD | VA_PICTURE_H264_BOTTOM_FIELD)))
                ok = 0;
        }
        if (!found)
            ok = 0;
    }
    for (int i = 0; i < 16; i++) {
        const VAPictureH264 *r = &pp->ReferenceFrames[i];
        if (VA_INVALID_PICTURE(*r) || client_used[i])
            continue;
        /* A surface the model does not know may stand for a frame inferred from a frame_num gap. */
        int gap = 0;
        for (int k = 0; k < refs->num_dpb; k++)
            if (refs->dpb[k].non_existing && refs->dpb[k].frame_num == r->frame_idx)
                gap = 1;
        if (!gap)
            ok = 0;
    }
    if (ok)
        return;
    struct ref_entry ce[16], de[H264_MAX_DPB + 1];
    int nc = 0, nd = 0;
    for (int i = 0; i < 16; i++) {
        const VAPictureH264 *r = &pp->ReferenceFrames[i];
        if (VA_INVALID_PICTURE(*r))
            continue;
        ce[nc++] = (struct ref_entry){ frame_poc(r->TopFieldOrderCnt, r->BottomFieldOrderCnt) - off, r->frame_idx,
                                       (r->flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) != 0 };
    }
    for (int k = 0; k < refs->num_dpb; k++) {
        const struct h264_dpb_pic *p = &refs->dpb[k];
        if (p->non_existing)
            continue;
        de[nd++] = (struct ref_entry){ frame_poc(p->top_poc, p->bottom_poc),
                                       p->long_term ? p->long_term_frame_idx : p->frame_num, p->long_term };
    }
    char a[512], b[512];
    format_ref_set(a, sizeof(a), ce, nc);
    format_ref_set(b, sizeof(b), de, nd);
    if (strcmp(a, b) == 0) {
        /* Same POCs and indices: the surfaces or field flags differ. */
        strncat(a, " (surfaces/flags differ)", sizeof(a) - strlen(a) - 1);
    }
    complain(c, "ReferenceFrames (poc:frame_idx)", a, b);
}

/* POCs are logged less the sequence's offset, so that clients that number differently agree. */
static void log_picture(FILE *log, const struct h264_check_input *in, const struct h264_slice_header *sh, int32_t off)
{
    const VAPictureParameterBufferH264 *pp = in->pp;
    char refs[512] = "-";
    if (sh->nal_unit_type != 5) {
        struct ref_entry e[16];
        int n = 0;
        for (int i = 0; i < 16; i++) {
            const VAPictureH264 *r = &pp->ReferenceFrames[i];
            if (!VA_INVALID_PICTURE(*r))
                e[n++] = (struct ref_entry){ frame_poc(r->TopFieldOrderCnt, r->BottomFieldOrderCnt) - off, r->frame_idx,
                                             (r->flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) != 0 };
        }
        format_ref_set(refs, sizeof(refs), e, n);
    }
    fprintf(log, "pic poc=%d,%d frame_num=%u ref=%u idr=%d refs=%s\n", pp->CurrPic.TopFieldOrderCnt - off,
            pp->CurrPic.BottomFieldOrderCnt - off, pp->frame_num, pp->pic_fields.bits.reference_pic_flag,
            sh->nal_unit_type == 5, refs);
}

static void log_slice(FILE *log, const struct h264_slice_header *sh, const VASliceParameterBufferH264 *s,
                      const struct h264_params *params, const struct ref_list lists[2], int model_valid,
                      int32_t off)
{
    char line[4096];
    snprintf(line, sizeof(line), "slice first_mb=%u type=%s bitoffset=%u qp_delta=%d dbk=%u,%d,%d",
             s->first_mb_in_slice, slice_type_name(s->slice_type % 5), s->slice_data_bit_offset, s->slice_qp_delta,
             s->disable_deblocking_filter_idc, s->slice_alpha_c0_offset_div2, s->slice_beta_offset_div2);
    int lists_used = sh->slice_type == SLICE_B ? 2 : (sh->slice_type == SLICE_P || sh->slice_type == SLICE_SP) ? 1 : 0;
    if (params->entropy_coding_mode && lists_used)
        append(line, sizeof(line), " cabac_init=%d", s->cabac_init_idc, 0);
    if (sh->slice_type == SLICE_B)
        append(line, sizeof(line), " direct_spatial=%d", s->direct_spatial_mv_pred_flag, 0);
    for (int list = 0; list < lists_used; list++) {
        int n = (list ? s->num_ref_idx_l1_active_minus1 : s->num_ref_idx_l0_active_minus1) + 1;
        const VAPictureH264 *l = list ? s->RefPicList1 : s->RefPicList0;
        append(line, sizeof(line), " nref%d=%d l", list, n);
        append(line, sizeof(line), "%d=", list, 0);
        for (int i = 0; i < n && i < 32; i++) {
            /* Positions the stream cannot use ("no reference picture", 8.2.4.2) print as '-' whatever
             * the client put there. */
            char token[24];
            if (VA_INVALID_PICTURE(l[i]) || (model_valid && i < H264_MAX_REFS && !lists[list].entry[i]))
                snprintf(token, sizeof(token), "-");
            else
                snprintf(token, sizeof(token), "%d%s", frame_poc(l[i].TopFieldOrderCnt, l[i].BottomFieldOrderCnt) - off,
                         (l[i].flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) ? "L" : "");
            size_t used = strlen(line);
            snprintf(line + used, sizeof(line) - used, "%s%s", i ? "," : "", token);
        }
    }
    if (sh->explicit_weights) {
        append(line, sizeof(line), " wp=%d,%d", s->luma_log2_weight_denom, s->chroma_log2_weight_denom);
        for (int list = 0; list < lists_used; list++) {
            int n = (list ? s->num_ref_idx_l1_active_minus1 : s->num_ref_idx_l0_active_minus1) + 1;
            for (int i = 0; i < n && i < 32; i++) {
                int32_t w[6];
                client_weights(s, list, i, w);
                append(line, sizeof(line), i ? ";%d,%d" : (list ? " wl1=%d,%d" : " wl0=%d,%d"), w[0], w[1]);
                append(line, sizeof(line), ",%d,%d", w[2], w[3]);
                append(line, sizeof(line), ",%d,%d", w[4], w[5]);
            }
        }
    }
    fprintf(log, "%s\n", line);
}

int h264_check_picture(struct h264_refs *refs, const struct h264_check_input *in, struct h264_pic_info *info,
                       h264_complain_fn complain_fn, void *opaque)
{
    struct checker c = { complain_fn, opaque, 0 };
    const struct h264_params *params = in->params;
    const VAPictureParameterBufferH264 *pp = in->pp;
    const struct h264_slice_header *first = &in->headers[0];
    char field[96], a[160], b[160];

    /* 7.4.1.2.4: these are equal in every slice of a picture. */
    for (int i = 1; i < in->num_slices; i++) {
        const struct h264_slice_header *sh = &in->headers[i];
        if (sh->frame_num != first->frame_num || sh->pps_id != first->pps_id ||
            (sh->nal_ref_idc != 0) != (first->nal_ref_idc != 0) || sh->nal_unit_type != first->nal_unit_type ||
            sh->pic_order_cnt_lsb != first->pic_order_cnt_lsb ||
            sh->delta_pic_order_cnt_bottom != first->delta_pic_order_cnt_bottom || sh->idr_pic_id != first->idr_pic_id ||
            sh->delta_pic_order_cnt[0] != first->delta_pic_order_cnt[0] ||
            sh->delta_pic_order_cnt[1] != first->delta_pic_order_cnt[1]) {
            snprintf(field, sizeof(field), "slice[%d] picture identity (frame_num, pps_id, nal_ref_idc, POC, idr)", i);
            complain(&c, field, "slice of another picture in the same vaBeginPicture/vaEndPicture",
                     "one picture per vaEndPicture");
        }
    }

    int idr = first->nal_unit_type == 5;
    if (!idr && refs->started && params->gaps_allowed)
        fill_frame_num_gap(refs, params, first->frame_num);
    compute_poc(refs, params, first, info);
    update_frame_num_wrap(refs, params, first->frame_num);
    int model_valid = refs->started || idr;

    if (params->poc_type == 1 && model_valid)
        resolve_poc_type1(refs, first, pp, info, idr || refs->prev_had_mmco5);
    else if (idr || refs->prev_had_mmco5)
        refs->client_poc_offset = pp->CurrPic.TopFieldOrderCnt - info->top_poc;
    const int32_t off = refs->client_poc_offset;

    /* Picture-level fields. */
    compare_int(&c, "frame_num", pp->frame_num, first->frame_num);
    compare_int(&c, "reference_pic_flag", pp->pic_fields.bits.reference_pic_flag, first->nal_ref_idc != 0);
    compare_int(&c, "CurrPic.picture_id", (long)pp->CurrPic.picture_id, (long)in->target);
    if (pp->CurrPic.flags & (VA_PICTURE_H264_INVALID | VA_PICTURE_H264_TOP_FIELD | VA_PICTURE_H264_BOTTOM_FIELD))
        compare_int(&c, "CurrPic.flags (invalid/field bits)",
                    pp->CurrPic.flags & (VA_PICTURE_H264_INVALID | VA_PICTURE_H264_TOP_FIELD | VA_PICTURE_H264_BOTTOM_FIELD), 0);
    if (model_valid) {
        compare_int(&c, "CurrPic.TopFieldOrderCnt (less the sequence's offset)", pp->CurrPic.TopFieldOrderCnt - off,
                    info->top_poc);
        compare_int(&c, "CurrPic.BottomFieldOrderCnt (less the sequence's offset)",
                    pp->CurrPic.BottomFieldOrderCnt - off, info->bottom_poc);
        compare_int(&c, "CurrPic.frame_idx", pp->CurrPic.frame_idx, first->frame_num);
        if (!idr)
            check_reference_frames(&c, refs, pp);
        if (!idr && in->gap_frames_required)
            check_gap_frames(&c, refs, pp);
        /* Decoding into a surface that still holds a reference destroys it; at an IDR every
         * reference is dropped anyway (8.2.5.1), so only other pictures are checked. */
        for (int k = 0; !idr && k < refs->num_dpb; k++) {
            if (refs->dpb[k].surface == in->target && !refs->dpb[k].non_existing) {
                snprintf(a, sizeof(a), "decodes into surface %#x", in->target);
                format_dpb_pic(b, sizeof(b), &refs->dpb[k]);
                complain(&c, "render target", a, b);
            }
        }
    }
    if (in->paramlog)
        log_picture(in->paramlog, in, first, off);

    int32_t current_poc = frame_poc(info->top_poc, info->bottom_poc);
    int default_count[2] = { -1, -1 };
    for (int i = 0; i < in->num_slices; i++) {
        const struct h264_slice_header *sh = &in->headers[i];
        const VASliceParameterBufferH264 *s = &in->slices[i];
#define FIELD(name) (snprintf(field, sizeof(field), "slice[%d].%s", i, name), field)
        compare_int(&c, FIELD("slice_data_bit_offset"), s->slice_data_bit_offset, sh->header_bits);
        compare_int(&c, FIELD("first_mb_in_slice"), s->first_mb_in_slice, sh->first_mb_in_slice);
        compare_int(&c, FIELD("slice_type % 5"), s->slice_type % 5, sh->slice_type);
        if (sh->slice_type == SLICE_B)
            compare_int(&c, FIELD("direct_spatial_mv_pred_flag"), s->direct_spatial_mv_pred_flag,
                        sh->direct_spatial_mv_pred_flag);
        int lists_used = sh->slice_type == SLICE_B ? 2 : (sh->slice_type == SLICE_P || sh->slice_type == SLICE_SP) ? 1 : 0;
        if (lists_used >= 1)
            compare_int(&c, FIELD("num_ref_idx_l0_active_minus1"), s->num_ref_idx_l0_active_minus1,
                        sh->num_ref_idx_active[0] - 1);
        if (lists_used == 2)
            compare_int(&c, FIELD("num_ref_idx_l1_active_minus1"), s->num_ref_idx_l1_active_minus1,
                        sh->num_ref_idx_active[1] - 1);
        /* Without the override the counts are the PPS defaults: equal in every such slice. */
        if (!sh->num_ref_idx_active_override_flag) {
            for (int list = 0; list < lists_used; list++) {
                if (default_count[list] < 0)
                    default_count[list] = sh->num_ref_idx_active[list];
                else if (default_count[list] != sh->num_ref_idx_active[list]) {
                    snprintf(field, sizeof(field), "slice[%d].num_ref_idx_l%d_active_minus1 (PPS default)", i, list);
                    snprintf(a, sizeof(a), "%d", sh->num_ref_idx_active[list] - 1);
                    snprintf(b, sizeof(b), "%d as in an earlier slice without override", default_count[list] - 1);
                    complain(&c, field, a, b);
                }
            }
        }
        if (params->entropy_coding_mode && lists_used)
            compare_int(&c, FIELD("cabac_init_idc"), s->cabac_init_idc, sh->cabac_init_idc);
        compare_int(&c, FIELD("slice_qp_delta"), s->slice_qp_delta, sh->slice_qp_delta);
        compare_int(&c, FIELD("disable_deblocking_filter_idc"), s->disable_deblocking_filter_idc,
                    sh->disable_deblocking_filter_idc);
        compare_int(&c, FIELD("slice_alpha_c0_offset_div2"), s->slice_alpha_c0_offset_div2,
                    sh->slice_alpha_c0_offset_div2);
        compare_int(&c, FIELD("slice_beta_offset_div2"), s->slice_beta_offset_div2, sh->slice_beta_offset_div2);
        if (sh->explicit_weights)
            check_weights(&c, i, s, sh);

        struct ref_list lists[2];
        memset(lists, 0, sizeof(lists));
        if (model_valid && lists_used) {
            init_lists(refs, sh, current_poc, lists);
            for (int list = 0; list < lists_used; list++) {
                char why[128];
                if (modify_list(refs, params, sh, list, &lists[list], why, sizeof(why)) < 0) {
                    snprintf(field, sizeof(field), "slice[%d].ref_pic_list_modification_l%d", i, list);
                    complain(&c, field, "(stream)", why);
                }
            }
        }
        for (int list = 0; list < lists_used; list++) {
            const VAPictureH264 *l = list ? s->RefPicList1 : s->RefPicList0;
            int n = sh->num_ref_idx_active[list];
            for (int k = 0; k < n; k++) {
                snprintf(field, sizeof(field), "slice[%d].RefPicList%d[%d]", i, list, k);
                if (!VA_INVALID_PICTURE(l[k]) && !in_client_refs(pp, &l[k])) {
                    format_va_pic(a, sizeof(a), &l[k], off);
                    complain(&c, field, a, "an entry of ReferenceFrames");
                    continue;
                }
                if (!model_valid)
                    continue;
                const struct h264_dpb_pic *e = lists[list].entry[k];
                if (!e || e->non_existing)
                    continue; /* nothing the stream may use: any entry (or none) will do */
                int long_term = VA_INVALID_PICTURE(l[k]) ? -1 : (l[k].flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) != 0;
                if (VA_INVALID_PICTURE(l[k]) || l[k].picture_id != e->surface || l[k].TopFieldOrderCnt - off != e->top_poc ||
                    l[k].BottomFieldOrderCnt - off != e->bottom_poc || long_term != e->long_term) {
                    format_va_pic(a, sizeof(a), &l[k], off);
                    format_dpb_pic(b, sizeof(b), e);
                    complain(&c, field, a, b);
                }
            }
        }
        if (in->paramlog)
            log_slice(in->paramlog, sh, s, params, lists, model_valid, off);
#undef FIELD
    }
    if (in->paramlog)
        fflush(in->paramlog);
    return c.count;
}

/* ---------- 8.2.5 marking ---------- */

void h264_mark_picture(struct h264_refs *refs, const struct h264_params *params,
                       const struct h264_slice_header *sh, const struct h264_pic_info *info, VASurfaceID target)
{
    int had_mmco5 = 0;
    struct h264_dpb_pic current = { .surface = target, .frame_num = sh->frame_num,
                                    .frame_num_wrap = (int32_t)sh->frame_num, .top_poc = info->top_poc,
                                    .bottom_poc = info->bottom_poc };
    if (info->idr) {
        refs->num_dpb = 0;
        refs->started = 1;
    }
    if (!refs->started) {
        /* Without an IDR the model cannot know the references: stay out until one arrives. */
        return;
    }
    update_frame_num_wrap(refs, params, sh->frame_num);
    if (sh->nal_ref_idc != 0) {
        if (info->idr) {
            /* 8.2.5.1 */
            if (sh->long_term_reference_flag) {
                current.long_term = 1;
                current.long_term_frame_idx = 0;
                refs->max_long_term_frame_idx = 0;
            } else {
                refs->max_long_term_frame_idx = -1;
            }
        } else if (sh->adaptive_ref_pic_marking_mode_flag) {
            /* 8.2.5.4 */
            int32_t curr_pic_num = (int32_t)sh->frame_num;
            for (int k = 0; k < sh->num_mmco; k++) {
                const struct h264_mmco *m = &sh->mmco[k];
                int index;
                switch (m->op) {
                case 1: /* 8.2.5.4.1 */
                    index = find_short(refs, curr_pic_num - (int32_t)(m->difference_of_pic_nums_minus1 + 1));
                    if (index >= 0)
                        dpb_remove(refs, index);
                    break;
                case 2: /* 8.2.5.4.2 */
                    index = find_long(refs, m->long_term_pic_num);
                    if (index >= 0)
                        dpb_remove(refs, index);
                    break;
                case 3: { /* 8.2.5.4.3 */
                    int32_t pic_num = curr_pic_num - (int32_t)(m->difference_of_pic_nums_minus1 + 1);
                    int other = find_long(refs, m->long_term_frame_idx);
                    index = find_short(refs, pic_num);
                    if (other >= 0 && other != index) {
                        dpb_remove(refs, other);
                        index = find_short(refs, pic_num);
                    }
                    if (index >= 0) {
                        refs->dpb[index].long_term = 1;
                        refs->dpb[index].long_term_frame_idx = m->long_term_frame_idx;
                    }
                    break;
                }
                case 4: /* 8.2.5.4.4 */
                    refs->max_long_term_frame_idx = (int)m->max_long_term_frame_idx_plus1 - 1;
                    for (int i = refs->num_dpb - 1; i >= 0; i--)
                        if (refs->dpb[i].long_term &&
                            (int64_t)refs->dpb[i].long_term_frame_idx > (int64_t)refs->max_long_term_frame_idx)
                            dpb_remove(refs, i);
                    break;
                case 5: /* 8.2.5.4.5 */
                    refs->num_dpb = 0;
                    refs->max_long_term_frame_idx = -1;
                    had_mmco5 = 1;
                    break;
                case 6: /* 8.2.5.4.6 */
                    index = find_long(refs, m->long_term_frame_idx);
                    if (index >= 0)
                        dpb_remove(refs, index);
                    current.long_term = 1;
                    current.long_term_frame_idx = m->long_term_frame_idx;
                    break;
                }
            }
        } else {
            sliding_window(refs, params);
        }
        if (had_mmco5) {
            /* 8.2.1: after memory_management_control_operation 5 the picture counts as POC
             * tempPicOrderCnt-relative and frame_num 0 (7.4.3). */
            int32_t temp = frame_poc(current.top_poc, current.bottom_poc);
            current.top_poc -= temp;
            current.bottom_poc -= temp;
            current.frame_num = 0;
            current.frame_num_wrap = 0;
        }
        dpb_insert(refs, &current);
    }

    /* State for the POC of the next pictures (8.2.1.1, 8.2.1.3) and for frame_num gaps (8.2.5.2). */
    if (sh->nal_ref_idc != 0) {
        if (had_mmco5) {
            refs->prev_poc_msb = 0;
            refs->prev_poc_lsb = current.top_poc;
        } else {
            refs->prev_poc_msb = info->poc_msb;
            refs->prev_poc_lsb = (int32_t)sh->pic_order_cnt_lsb;
        }
        refs->prev_ref_frame_num = had_mmco5 ? 0 : sh->frame_num;
    }
    refs->prev_frame_num = had_mmco5 ? 0 : sh->frame_num;
    refs->prev_frame_num_offset = info->frame_num_offset;
    refs->prev_had_mmco5 = had_mmco5;
}
