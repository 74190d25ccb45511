/*
 * libFuzzer target for the escalation message decoder, as the server uses
 * it: the input is a byte stream from an untrusted peer, decoded frame by
 * frame until it needs more bytes or fails. Every frame that decodes must
 * re-encode to exactly the same bytes (the codec has one representation per
 * message), and decoding any prefix of it must ask for more, never succeed
 * or fail differently.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/esc_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_roundtrip(const uint8_t *frame, size_t len, const struct esc_msg *msg)
{
    struct esc_buf again = {0};
    if (esc_msg_encode(msg, &again, NULL) != 0)
        abort(); /* the decoder accepted what the encoder refuses */
    if (again.len != len || memcmp(again.data, frame, len) != 0)
        abort();
    esc_buf_free(&again);
    /* A few prefixes: the body is incomplete, so the answer is "more". */
    size_t cuts[] = {len - 1, len / 2, ESC_HEADER_SIZE};
    for (size_t i = 0; i < 3; i++) {
        struct esc_msg m;
        size_t used;
        if (cuts[i] < len && cuts[i] >= ESC_HEADER_SIZE &&
            esc_msg_decode(frame, cuts[i], &m, &used, NULL) != 0)
            abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        struct esc_msg msg;
        size_t used = 0;
        const char *why = NULL;
        int rc = esc_msg_decode(data + off, size - off, &msg, &used, &why);
        if (rc <= 0) {
            if (rc < 0 && why == NULL)
                abort(); /* every refusal explains itself */
            break;
        }
        if (used < ESC_HEADER_SIZE || used > size - off)
            abort();
        check_roundtrip(data + off, used, &msg);
        esc_msg_free(&msg);
        off += used;
    }
    return 0;
}
