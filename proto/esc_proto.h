/*
 * esc_proto: the escalation wire format between execgate-wrapper and the
 * server, as a codec on memory buffers (no I/O, no libuv), so the wrapper's
 * blocking code and the server's event loop share one parser.
 *
 * Every frame is an 8-byte header followed by a body:
 *   u32 body_len | u16 version | u16 type      (all little-endian)
 * The full layout of every body, the sequence and the limits are in
 * docs/escalation-protocol.md.
 *
 * Decoding never trusts the peer: every length is checked against what is
 * left of the buffer and against the limits below before it is used, counts
 * are bounded, and the result owns fresh copies (NUL-terminated) of all data.
 */
#ifndef EXECGATE_PROTO_ESC_PROTO_H
#define EXECGATE_PROTO_ESC_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* 2: a REQUEST may open a session as the first datagram (with the
 * session's fd), saving a message and a wake-up of the server per exec. */
#define ESC_PROTO_VERSION 2

/* Size of the fixed frame header. */
#define ESC_HEADER_SIZE 8
/* Largest body a frame may announce; larger is refused from the header
 * alone, before anything is buffered. Linux's ARG_MAX for argv + env is
 * a quarter of the stack limit (2 MiB by default); 4 MiB leaves room for
 * the length prefixes and a raised stack limit. */
#define ESC_MAX_BODY (4u * 1024 * 1024)
/* One argv or env string, in bytes, without NUL (Linux MAX_ARG_STRLEN - 1). */
#define ESC_MAX_STRING (128u * 1024 - 1)
/* file and workdir, in bytes (PATH_MAX - 1). */
#define ESC_MAX_PATH 4095u
/* Counts of argv and env entries: room for a glob over a big tree, while
 * bounding what one session can make the server allocate. */
#define ESC_MAX_ARGS 131072u
#define ESC_MAX_ENV  32768u
/* Largest first datagram (a whole REQUEST frame) the wrapper sends and the
 * server reads; a larger REQUEST goes on the session's stream after a
 * HELLO. Well below the default socket send buffer (net.core.wmem_default,
 * 208 KiB), which bounds an AF_UNIX datagram. */
#define ESC_MAX_DGRAM (64u * 1024)
/* A Deny reason, in bytes of UTF-8. */
#define ESC_MAX_REASON 4096u
/* Fds in one FDS message (the kernel's SCM_MAX_FD is 253). */
#define ESC_MAX_FDS 128u
/* Target fd numbers must be below this (the usual RLIMIT_NOFILE soft limit). */
#define ESC_MAX_FD_NUMBER 1024

enum esc_msg_type {
    ESC_MSG_HELLO = 1,    /* wrapper -> server, datagram, carries 1 fd */
    ESC_MSG_REQUEST = 2,  /* wrapper -> server: file, argv, workdir, env; on the
                             stream after a HELLO, or as the datagram with 1 fd */
    ESC_MSG_RUN = 3,      /* server -> wrapper: exec it yourself */
    ESC_MSG_ESCALATE = 4, /* server -> wrapper: send your fds, I run it */
    ESC_MSG_DENY = 5,     /* server -> wrapper: refused, with a reason */
    ESC_MSG_FDS = 6,      /* wrapper -> server: target numbers + SCM_RIGHTS */
    ESC_MSG_SIGNAL = 7,   /* wrapper -> server: forward this signal */
    ESC_MSG_EXIT = 8,     /* server -> wrapper: how the program ended */
};

enum esc_exit_kind {
    ESC_EXIT_CODE = 0,   /* value is an exit code 0..255 */
    ESC_EXIT_SIGNAL = 1, /* value is a signal number 1..64 */
};

/* A REQUEST. Decoded: every pointer is owned by the message. Encoded: the
 * encoder only reads; argv and env need not be NULL-terminated (the counts
 * rule), but decoded ones are, so they can go straight to execve. */
struct esc_request {
    char *file;
    char **argv;
    size_t argc;
    char *workdir;
    char **env;
    size_t envc;
};

struct esc_msg {
    enum esc_msg_type type;
    union {
        struct esc_request request; /* ESC_MSG_REQUEST */
        char *deny_reason;          /* ESC_MSG_DENY (UTF-8, no NUL) */
        /* ESC_MSG_RUN: NULL, or why a program a rule let out runs in the
         * sandbox after all, which the wrapper says on stderr (as DENY's
         * reason) */
        char *run_note;
        struct {
            int *targets; /* ESC_MSG_FDS: target fd numbers, in SCM_RIGHTS order */
            size_t count;
        } fds;
        int signo; /* ESC_MSG_SIGNAL: SIGHUP, SIGINT or SIGTERM */
        struct {
            enum esc_exit_kind kind; /* ESC_MSG_EXIT */
            int value;
        } exit;
    } u;
};

/* A growable byte buffer; zero-initialise before first use. */
struct esc_buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Frees the buffer's storage and zeroes it; the struct is the caller's.
 * NULL is a no-op. Cannot fail. */
void esc_buf_free(struct esc_buf *buf);

/* Removes the first n bytes (n <= len), keeping the rest. Cannot fail. */
void esc_buf_consume(struct esc_buf *buf, size_t n);

/* Makes room for at least `more` bytes after len. Returns 0, or -ENOMEM
 * (buffer unchanged) or -EMSGSIZE when len + more would overflow. */
int esc_buf_reserve(struct esc_buf *buf, size_t more);

/*
 * Appends one complete frame for msg to out. The message is validated with
 * the same rules the decoder applies, so whatever this encodes the peer can
 * decode. Returns 0, or a negative errno with out unchanged and *why (when
 * why is not NULL) set to a static description:
 *   -EINVAL   a field breaks a rule (empty file, relative workdir, bad signal...)
 *   -EMSGSIZE a limit is exceeded
 *   -ENOMEM   out of memory
 */
int esc_msg_encode(const struct esc_msg *msg, struct esc_buf *out, const char **why);

/*
 * Decodes the frame at the start of buf[0..len).
 * Returns 1 with *out filled (free with esc_msg_free) and *consumed set to
 * the frame's size; 0 when more bytes are needed (nothing stored); or a
 * negative errno with nothing stored and *why (when not NULL) set to a static
 * description:
 *   -EPROTONOSUPPORT  version field is not ESC_PROTO_VERSION
 *   -EMSGSIZE         body length or a field exceeds a limit
 *   -EBADMSG          unknown type, bad lengths, NUL in a string, bad UTF-8,
 *                     a rule broken (see docs), trailing bytes in the body
 *   -ENOMEM           out of memory
 * Header errors (version, size, type) are reported as soon as the 8 header
 * bytes are present, so a peer cannot make the caller buffer a huge body.
 */
int esc_msg_decode(const void *buf, size_t len, struct esc_msg *out, size_t *consumed,
                   const char **why);

/* Frees what a decoded message owns and zeroes it. NULL is a no-op. */
void esc_msg_free(struct esc_msg *msg);

/* Name of a message type for diagnostics ("REQUEST"), "unknown" otherwise. */
const char *esc_msg_type_name(int type);

/* The signals a SIGNAL message may carry, which the client forwards to
 * an escalated program (names from <signal.h>, for an array's braces). */
#define ESC_FORWARDED_SIGNALS SIGHUP, SIGINT, SIGTERM

#endif
