/* libavcodec as the software VA driver's decoding engine. */
#ifndef SWIFTVT_SW_AVDECODE_H
#define SWIFTVT_SW_AVDECODE_H

#include <stddef.h>
#include <stdint.h>

struct avdec;

/* The picture libavcodec allocated for the access unit just decoded (8-bit 4:2:0, planar, the
 * full coded size). Valid until the next avdec_decode or avdec_free. */
struct avdec_picture {
    const uint8_t *plane[3];
    int stride[3];
    int width;
    int height;
};

/* selfcheck: hash every captured picture and compare it with the frame libavcodec outputs for
 * it later, which proves that the picture was complete when it was captured. */
struct avdec *avdec_new(int selfcheck, char *error, size_t error_size);
void avdec_free(struct avdec *dec);

/* Decodes one access unit (Annex B: parameter sets if any, then every slice of one picture) and
 * returns the picture allocated for it. Returns 0, or -1 with error set. */
int avdec_decode(struct avdec *dec, const uint8_t *data, size_t size, struct avdec_picture *picture,
                 char *error, size_t error_size);

/* End of stream: lets libavcodec output the pictures it still delays, so that the self-check
 * covers them too. */
void avdec_finish(struct avdec *dec);

/* Self-check results so far: output frames whose content was compared, and mismatches. */
void avdec_selfcheck_counts(const struct avdec *dec, long *verified, long *mismatched);

/* Appends one NAL unit after a 4-byte start code to the access unit `*au` (`*size` bytes used
 * of `*capacity`), growing it; 0, or -1 when memory runs out (the access unit is unchanged). */
int avdec_append_nal(uint8_t **au, size_t *size, size_t *capacity, const uint8_t *nal, size_t nal_size);

#endif
