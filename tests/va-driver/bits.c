/* Bit-level reading and writing of H.264 RBSPs and NAL units; see bits.h. */
#include "bits.h"

#include <string.h>

void br_init(struct bitreader *br, const uint8_t *data, size_t size)
{
    br->data = data;
    br->size = size;
    br->pos = 0;
    br->overrun = 0;
}

static uint32_t br_bit(struct bitreader *br)
{
    if (br->pos >= br->size * 8) {
        br->overrun = 1;
        br->pos++;
        return 0;
    }
    uint32_t bit = (br->data[br->pos >> 3] >> (7 - (br->pos & 7))) & 1;
    br->pos++;
    return bit;
}

uint32_t br_u(struct bitreader *br, int bits)
{
    uint32_t value = 0;
    for (int i = 0; i < bits; i++)
        value = (value << 1) | br_bit(br);
    return value;
}

uint32_t br_ue(struct bitreader *br)
{
    /* 9.1: leadingZeroBits zeros, a one, then leadingZeroBits bits. More than 31 leading zeros
     * cannot encode a 32-bit value: treat it as a broken stream. */
    int zeros = 0;
    while (br_bit(br) == 0) {
        if (br->overrun || ++zeros > 31) {
            br->overrun = 1;
            return 0;
        }
    }
    if (zeros == 0)
        return 0;
    return (uint32_t)((1ull << zeros) - 1 + br_u(br, zeros));
}

int32_t br_se(struct bitreader *br)
{
    /* 9.1.1, Table 9-3: k -> (-1)^(k+1) * Ceil(k / 2). */
    uint32_t k = br_ue(br);
    if (k & 1)
        return (int32_t)((k + 1) / 2);
    return -(int32_t)(k / 2);
}

void bw_init(struct bitwriter *bw, uint8_t *data, size_t capacity)
{
    bw->data = data;
    bw->capacity = capacity;
    bw->pos = 0;
    bw->overflow = 0;
    memset(data, 0, capacity);
}

static void bw_bit(struct bitwriter *bw, uint32_t bit)
{
    if (bw->pos >= bw->capacity * 8) {
        bw->overflow = 1;
        return;
    }
    if (bit)
        bw->data[bw->pos >> 3] |= (uint8_t)(0x80 >> (bw->pos & 7));
    bw->pos++;
}

void bw_u(struct bitwriter *bw, int bits, uint32_t value)
{
    for (int i = bits - 1; i >= 0; i--)
        bw_bit(bw, (value >> i) & 1);
}

void bw_ue(struct bitwriter *bw, uint32_t value)
{
    uint64_t code = (uint64_t)value + 1;
    int length = 0;
    while ((code >> length) > 1)
        length++;
    bw_u(bw, length, 0);
    for (int i = length; i >= 0; i--)
        bw_bit(bw, (uint32_t)(code >> i) & 1);
}

void bw_se(struct bitwriter *bw, int32_t value)
{
    /* Inverse of Table 9-3. */
    if (value > 0)
        bw_ue(bw, (uint32_t)value * 2 - 1);
    else
        bw_ue(bw, (uint32_t)(-(int64_t)value) * 2);
}

void bw_trailing(struct bitwriter *bw)
{
    bw_bit(bw, 1);
    while (bw->pos & 7)
        bw_bit(bw, 0);
}

size_t bw_bytes(const struct bitwriter *bw)
{
    return (bw->pos + 7) / 8;
}

void bw_copy_bits(struct bitwriter *bw, const uint8_t *src, size_t bits)
{
    for (size_t i = 0; i < bits; i++)
        bw_bit(bw, (src[i >> 3] >> (7 - (i & 7))) & 1);
}

void bw_copy_bit_range(struct bitwriter *bw, const uint8_t *src, size_t from, size_t bits)
{
    for (size_t i = from; i < from + bits; i++)
        bw_bit(bw, (src[i >> 3] >> (7 - (i & 7))) & 1);
}

void bw_put_aligned_bytes(struct bitwriter *bw, const uint8_t *bytes, size_t size)
{
    if ((bw->pos & 7) || bw->pos / 8 + size > bw->capacity) {
        bw->overflow = 1;
        return;
    }
    memcpy(bw->data + bw->pos / 8, bytes, size);
    bw->pos += size * 8;
}

size_t nal_unescape(uint8_t *dst, const uint8_t *src, size_t size)
{
    size_t out = 0;
    int zeros = 0;
    for (size_t i = 0; i < size; i++) {
        if (zeros >= 2 && src[i] == 0x03) {
            zeros = 0;
            continue;
        }
        zeros = src[i] == 0 ? zeros + 1 : 0;
        dst[out++] = src[i];
    }
    return out;
}

size_t nal_escape(uint8_t *dst, size_t capacity, uint8_t header, const uint8_t *rbsp, size_t size)
{
    size_t out = 0;
    int zeros = 0;
    if (capacity < 1)
        return 0;
    dst[out++] = header;
    for (size_t i = 0; i < size; i++) {
        if (zeros >= 2 && rbsp[i] <= 3) {
            if (out >= capacity)
                return 0;
            dst[out++] = 0x03;
            zeros = 0;
        }
        if (out >= capacity)
            return 0;
        dst[out++] = rbsp[i];
        zeros = rbsp[i] == 0 ? zeros + 1 : 0;
    }
    /* 7.4.1: an RBSP may not end in a zero byte inside a NAL unit without a final 0x03. */
    if (size > 0 && rbsp[size - 1] == 0) {
        if (out >= capacity)
            return 0;
        dst[out++] = 0x03;
    }
    return out;
}
