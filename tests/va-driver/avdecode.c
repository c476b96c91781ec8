/* libavcodec as the software VA driver's decoding engine.
 *
 * A VA decoder must write each picture into the surface the client named at vaBeginPicture, in
 * decoding order. libavcodec's own output is in display order, delayed, and may skip pictures, so
 * its output cannot be used. Instead the driver takes the picture that libavcodec allocates for the
 * access unit it is decoding, through get_buffer2: with one thread (no frame or slice threads) and a
 * packet holding the whole access unit, avcodec_send_packet() returns only after every slice was
 * decoded, the deblocking filter ran and ff_h264_field_end() finished the picture, so the buffer is
 * complete when the call returns. The self-check mode verifies this on every picture that
 * libavcodec later outputs. */
#include "avdecode.h"

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 64

struct avdec {
    AVCodecContext *codec;
    AVPacket *packet;
    AVFrame *captured;   /* a reference to the last picture allocated through get_buffer2 */
    AVFrame *output;
    int allocations;     /* get_buffer2 calls during the current packet */
    int selfcheck;
    struct {
        const uint8_t *data;
        uint64_t hash;
    } ring[RING];
    int ring_next;
    long verified;
    long mismatched;
};

static int capture_buffer(AVCodecContext *codec, AVFrame *frame, int flags)
{
    struct avdec *dec = codec->opaque;
    int rc = avcodec_default_get_buffer2(codec, frame, flags);
    if (rc < 0)
        return rc;
    /* Gap frames (8.2.5.2) are allocated before the current picture of the same packet, so the last
     * allocation of a packet is the picture being decoded. */
    av_frame_unref(dec->captured);
    if (av_frame_ref(dec->captured, frame) < 0)
        return AVERROR(ENOMEM);
    dec->allocations++;
    return 0;
}

static uint64_t picture_hash(const uint8_t *const plane[3], const int stride[3], int width, int height)
{
    uint64_t hash = 1469598103934665603ull; /* FNV-1a */
    for (int p = 0; p < 3; p++) {
        int w = p ? (width + 1) / 2 : width, h = p ? (height + 1) / 2 : height;
        for (int y = 0; y < h; y++) {
            const uint8_t *row = plane[p] + (ptrdiff_t)y * stride[p];
            for (int x = 0; x < w; x++) {
                hash ^= row[x];
                hash *= 1099511628211ull;
            }
        }
    }
    return hash;
}

struct avdec *avdec_new(int selfcheck, char *error, size_t error_size)
{
    const AVCodec *h264 = avcodec_find_decoder(AV_CODEC_ID_H264);
    if (!h264) {
        snprintf(error, error_size, "libavcodec has no H.264 decoder");
        return NULL;
    }
    struct avdec *dec = calloc(1, sizeof(*dec));
    if (!dec)
        return NULL;
    dec->selfcheck = selfcheck;
    dec->codec = avcodec_alloc_context3(h264);
    dec->packet = av_packet_alloc();
    dec->captured = av_frame_alloc();
    dec->output = av_frame_alloc();
    if (!dec->codec || !dec->packet || !dec->captured || !dec->output) {
        snprintf(error, error_size, "out of memory");
        avdec_free(dec);
        return NULL;
    }
    dec->codec->opaque = dec;
    dec->codec->get_buffer2 = capture_buffer;
    dec->codec->thread_count = 1;
    dec->codec->thread_type = 0;
    /* Keep decoding whatever happens; the surface gets what libavcodec made of the picture. */
    dec->codec->flags |= AV_CODEC_FLAG_OUTPUT_CORRUPT;
    dec->codec->flags2 |= AV_CODEC_FLAG2_SHOW_ALL;
    int rc = avcodec_open2(dec->codec, h264, NULL);
    if (rc < 0) {
        snprintf(error, error_size, "avcodec_open2 failed: %s", av_err2str(rc));
        avdec_free(dec);
        return NULL;
    }
    return dec;
}

void avdec_free(struct avdec *dec)
{
    if (!dec)
        return;
    av_frame_free(&dec->captured);
    av_frame_free(&dec->output);
    av_packet_free(&dec->packet);
    avcodec_free_context(&dec->codec);
    free(dec);
}

/* Takes every frame libavcodec has ready (it must not hold any, or the next send is refused) and
 * in self-check mode compares each with the hash taken when it was captured. */
static void drain(struct avdec *dec)
{
    while (avcodec_receive_frame(dec->codec, dec->output) == 0) {
        if (dec->selfcheck) {
            for (int i = 0; i < RING; i++) {
                if (dec->ring[i].data && dec->ring[i].data == dec->output->data[0]) {
                    const uint8_t *planes[3] = { dec->output->data[0], dec->output->data[1], dec->output->data[2] };
                    uint64_t hash = picture_hash(planes, dec->output->linesize, dec->output->width, dec->output->height);
                    if (hash == dec->ring[i].hash)
                        dec->verified++;
                    else
                        dec->mismatched++;
                    dec->ring[i].data = NULL;
                    break;
                }
            }
        }
        av_frame_unref(dec->output);
    }
}

int avdec_decode(struct avdec *dec, const uint8_t *data, size_t size, struct avdec_picture *picture,
                 char *error, size_t error_size)
{
    drain(dec);
    av_frame_unref(dec->captured);
    dec->allocations = 0;
    av_packet_unref(dec->packet);
    if (av_new_packet(dec->packet, (int)size) < 0) {
        snprintf(error, error_size, "out of memory");
        return -1;
    }
    memcpy(dec->packet->data, data, size);
    int rc = avcodec_send_packet(dec->codec, dec->packet);
    av_packet_unref(dec->packet);
    if (rc < 0) {
        snprintf(error, error_size, "libavcodec refused the access unit: %s", av_err2str(rc));
        return -1;
    }
    if (dec->allocations == 0 || !dec->captured->data[0]) {
        snprintf(error, error_size, "libavcodec decoded no picture from the access unit");
        return -1;
    }
    AVFrame *f = dec->captured;
    if (f->format != AV_PIX_FMT_YUV420P && f->format != AV_PIX_FMT_YUVJ420P) {
        snprintf(error, error_size, "libavcodec picture format %s, not 8-bit 4:2:0",
                 av_get_pix_fmt_name((enum AVPixelFormat)f->format));
        return -1;
    }
    for (int p = 0; p < 3; p++) {
        picture->plane[p] = f->data[p];
        picture->stride[p] = f->linesize[p];
    }
    picture->width = f->width;
    picture->height = f->height;
    if (dec->selfcheck) {
        /* A pooled buffer may come back for a new picture: forget what it held before. */
        for (int i = 0; i < RING; i++)
            if (dec->ring[i].data == f->data[0])
                dec->ring[i].data = NULL;
        dec->ring[dec->ring_next].data = f->data[0];
        dec->ring[dec->ring_next].hash = picture_hash(picture->plane, picture->stride, f->width, f->height);
        dec->ring_next = (dec->ring_next + 1) % RING;
    }
    drain(dec);
    return 0;
}

void avdec_finish(struct avdec *dec)
{
    if (avcodec_send_packet(dec->codec, NULL) == 0)
        drain(dec);
}

void avdec_selfcheck_counts(const struct avdec *dec, long *verified, long *mismatched)
{
    *verified = dec ? dec->verified : 0;
    *mismatched = dec ? dec->mismatched : 0;
}

int avdec_append_nal(uint8_t **au, size_t *size, size_t *capacity, const uint8_t *nal, size_t nal_size)
{
    if (*size + nal_size + 4 > *capacity) {
        size_t cap = (*size + nal_size + 4) * 2;
        uint8_t *grown = realloc(*au, cap);
        if (!grown)
            return -1;
        *au = grown;
        *capacity = cap;
    }
    static const uint8_t start_code[4] = { 0, 0, 0, 1 };
    memcpy(*au + *size, start_code, 4);
    memcpy(*au + *size + 4, nal, nal_size);
    *size += nal_size + 4;
    return 0;
}
