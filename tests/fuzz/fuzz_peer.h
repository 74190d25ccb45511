/*
 * fuzz_peer: plays the client of a socket-serving fuzz target.  The
 * fuzzer's input is sent to the server's side as fast as it takes it, its
 * answers are read and dropped, and the loop turns in between, so the
 * server sees partial reads, a half-closed peer and a peer that stops
 * sending, as real clients do.
 */
#ifndef EXECGATE_FUZZ_PEER_H
#define EXECGATE_FUZZ_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct fuzz_peer {
    uv_loop_t *loop;
    int fd;          /* the client's end, non-blocking */
    bool half_close; /* shut the client's writing side once all is sent */
    int quiet_limit; /* rounds without input or answers that end the talk */
    /* Called when nothing has moved for two rounds; returns true when it
     * made something happen (answered a question).  NULL: none. */
    bool (*on_quiet)(void *data);
    void *data;
};

/* Sends data[0..size) through p->fd and reads the answers, turning the loop,
 * until the server closes the connection or all is sent and nothing moves
 * for p->quiet_limit rounds.  The caller closes p->fd. */
void fuzz_peer_talk(const struct fuzz_peer *p, const uint8_t *data, size_t size);

#endif
