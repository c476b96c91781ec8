/* Bit-level reading and writing of H.264 RBSPs and NAL units (H.264 7.2, 7.3, 7.4.1).
 *
 * The reader works on the RBSP, i.e. after emulation-prevention bytes were removed, because every
 * bit position the driver reports (slice_data_bit_offset) is defined on that payload. The writer
 * builds an RBSP and escapes it when it is wrapped into a NAL unit. */
#ifndef SWIFTVT_SW_BITS_H
#define SWIFTVT_SW_BITS_H

#include <stddef.h>
#include <stdint.h>

struct bitreader {
    const uint8_t *data;
    size_t size;      /* bytes */
    size_t pos;       /* bits consumed */
    int overrun;      /* set once a read went past the end */
};

void br_init(struct bitreader *br, const uint8_t *data, size_t size);
uint32_t br_u(struct bitreader *br, int bits); /* u(n), n <= 32 */
uint32_t br_ue(struct bitreader *br);          /* ue(v), 9.1 */
int32_t br_se(struct bitreader *br);           /* se(v), 9.1.1 */

struct bitwriter {
    uint8_t *data;
    size_t capacity;
    size_t pos;       /* bits written */
    int overflow;
};

void bw_init(struct bitwriter *bw, uint8_t *data, size_t capacity);
void bw_u(struct bitwriter *bw, int bits, uint32_t value);
void bw_ue(struct bitwriter *bw, uint32_t value);
void bw_se(struct bitwriter *bw, int32_t value);
/* rbsp_trailing_bits() (7.3.2.11): a one bit, then zero bits up to the byte boundary. */
void bw_trailing(struct bitwriter *bw);
size_t bw_bytes(const struct bitwriter *bw);
/* Appends the first `bits` bits of src (most significant bit first), at any bit position. */
void bw_copy_bits(struct bitwriter *bw, const uint8_t *src, size_t bits);
/* Appends `bits` bits of src starting at bit `from` (most significant bit first). */
void bw_copy_bit_range(struct bitwriter *bw, const uint8_t *src, size_t from, size_t bits);
/* Appends whole bytes; the writer must be byte-aligned (bw->pos % 8 == 0). */
void bw_put_aligned_bytes(struct bitwriter *bw, const uint8_t *bytes, size_t size);

/* Removes emulation_prevention_three_byte (7.3.1, 7.4.1) from src into dst (dst holds at least
 * size bytes). Returns the RBSP size. */
size_t nal_unescape(uint8_t *dst, const uint8_t *src, size_t size);

/* Writes a NAL unit: header byte, then the RBSP with an emulation_prevention_three_byte inserted
 * wherever two zero bytes are followed by a byte <= 3 (7.4.1). Returns the NAL size, or 0 when dst
 * (capacity bytes) is too small. */
size_t nal_escape(uint8_t *dst, size_t capacity, uint8_t header, const uint8_t *rbsp, size_t size);

#endif
