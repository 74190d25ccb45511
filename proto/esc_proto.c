/*
 * esc_proto: encoder and decoder of escalation frames (see esc_proto.h and
 * docs/escalation-protocol.md).
 */
#include "proto/esc_proto.h"
#include "common/macros.h"
#include "common/strv.h"
#include "common/utf8.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- buffers ---- */

void
esc_buf_free(struct esc_buf *buf)
{
    if (buf == NULL)
        return;
    free(buf->data);
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
}

void
esc_buf_consume(struct esc_buf *buf, size_t n)
{
    if (n >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->data, buf->data + n, buf->len - n);
    buf->len -= n;
}

int
esc_buf_reserve(struct esc_buf *buf, size_t more)
{
    if (more > SIZE_MAX - buf->len)
        return -EMSGSIZE;
    size_t need = buf->len + more;
    if (need <= buf->cap)
        return 0;
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *data = realloc(buf->data, cap);
    if (data == NULL)
        return -ENOMEM;
    buf->data = data;
    buf->cap = cap;
    return 0;
}

/* ---- shared rules ---- */

const char *
esc_msg_type_name(int type)
{
    switch (type) {
    case ESC_MSG_HELLO:
        return "HELLO";
    case ESC_MSG_REQUEST:
        return "REQUEST";
    case ESC_MSG_RUN:
        return "RUN";
    case ESC_MSG_ESCALATE:
        return "ESCALATE";
    case ESC_MSG_DENY:
        return "DENY";
    case ESC_MSG_FDS:
        return "FDS";
    case ESC_MSG_SIGNAL:
        return "SIGNAL";
    case ESC_MSG_EXIT:
        return "EXIT";
    default:
        return "unknown";
    }
}

/* Whether signo may travel in a SIGNAL message. */
static bool
signal_forwardable(int signo)
{
    static const int forwarded[] = {ESC_FORWARDED_SIGNALS};
    for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
        if (forwarded[i] == signo)
            return true;
    return false;
}

/* Which string rule a field follows; one place so encoder and decoder agree. */
enum str_kind { STR_FILE, STR_ARG, STR_WORKDIR, STR_ENV, STR_REASON };

static int
str_check(enum str_kind kind, const char *s, size_t len, const char **why)
{
    size_t max = kind == STR_FILE || kind == STR_WORKDIR ? ESC_MAX_PATH
                 : kind == STR_REASON                    ? ESC_MAX_REASON
                                                         : ESC_MAX_STRING;
    if (len > max) {
        *why = kind == STR_FILE      ? "file is longer than ESC_MAX_PATH"
               : kind == STR_WORKDIR ? "workdir is longer than ESC_MAX_PATH"
               : kind == STR_REASON  ? "reason is longer than ESC_MAX_REASON"
                                     : "argv or env entry is longer than ESC_MAX_STRING";
        return -EMSGSIZE;
    }
    if (memchr(s, '\0', len) != NULL) {
        *why = "a string contains a NUL byte";
        return -EBADMSG;
    }
    switch (kind) {
    case STR_FILE:
        if (len == 0) {
            *why = "file is empty";
            return -EBADMSG;
        }
        break;
    case STR_WORKDIR:
        if (len == 0 || s[0] != '/') {
            *why = "workdir is not an absolute path";
            return -EBADMSG;
        }
        break;
    case STR_ENV: {
        const char *eq = memchr(s, '=', len);
        if (eq == NULL || eq == s) {
            *why = "env entry is not NAME=VALUE with a non-empty NAME";
            return -EBADMSG;
        }
        break;
    }
    case STR_REASON:
        if (len == 0) {
            *why = "reason is empty";
            return -EBADMSG;
        }
        if (!utf8_valid(s, len)) {
            *why = "reason is not valid UTF-8";
            return -EBADMSG;
        }
        break;
    case STR_ARG:
        break;
    }
    return 0;
}

/* ---- encoder ---- */

static void
put_u16(char *p, uint16_t v)
{
    p[0] = (char)(v & 0xFF);
    p[1] = (char)(v >> 8);
}

static void
put_u32(char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (char)((v >> (8 * i)) & 0xFF);
}

/* Appends to a buffer whose room was reserved up front. */
struct writer {
    char *p;
};

static void
w_u32(struct writer *w, uint32_t v)
{
    put_u32(w->p, v);
    w->p += 4;
}

static void
w_str(struct writer *w, const char *s, size_t len)
{
    w_u32(w, (uint32_t)len);
    memcpy(w->p, s, len);
    w->p += len;
}

/* Adds a string's encoded size to *size after checking it; -errno on error. */
static int
size_str(enum str_kind kind, const char *s, size_t *size, const char **why)
{
    if (s == NULL) {
        *why = "a string is missing";
        return -EINVAL;
    }
    size_t len = strlen(s);
    int rc = str_check(kind, s, len, why);
    if (rc < 0)
        return rc == -EBADMSG ? -EINVAL : rc;
    *size += 4 + len;
    return 0;
}

static int
size_request(const struct esc_request *r, size_t *size, const char **why)
{
    int rc;
    if (r->argc == 0 || r->argc > ESC_MAX_ARGS || r->envc > ESC_MAX_ENV) {
        *why = r->argc == 0 ? "argv is empty" : "too many argv or env entries";
        return r->argc == 0 ? -EINVAL : -EMSGSIZE;
    }
    if ((rc = size_str(STR_FILE, r->file, size, why)) < 0)
        return rc;
    *size += 4;
    for (size_t i = 0; i < r->argc; i++) {
        if ((rc = size_str(STR_ARG, r->argv[i], size, why)) < 0)
            return rc;
        if (*size > ESC_MAX_BODY)
            break;
    }
    if ((rc = size_str(STR_WORKDIR, r->workdir, size, why)) < 0)
        return rc;
    *size += 4;
    for (size_t i = 0; i < r->envc && *size <= ESC_MAX_BODY; i++) {
        if ((rc = size_str(STR_ENV, r->env[i], size, why)) < 0)
            return rc;
    }
    return 0;
}

static int
targets_check(const int *targets, size_t count, const char **why)
{
    if (count > ESC_MAX_FDS) {
        *why = "more fds than ESC_MAX_FDS";
        return -EMSGSIZE;
    }
    for (size_t i = 0; i < count; i++) {
        if (targets[i] < 0 || targets[i] >= ESC_MAX_FD_NUMBER) {
            *why = "target fd number out of range";
            return -EBADMSG;
        }
        for (size_t j = 0; j < i; j++) {
            if (targets[j] == targets[i]) {
                *why = "target fd number repeated";
                return -EBADMSG;
            }
        }
    }
    return 0;
}

static int
exit_check(enum esc_exit_kind kind, int64_t value, const char **why)
{
    if (kind == ESC_EXIT_CODE && value >= 0 && value <= 255)
        return 0;
    if (kind == ESC_EXIT_SIGNAL && value >= 1 && value <= 64)
        return 0;
    *why = kind == ESC_EXIT_CODE || kind == ESC_EXIT_SIGNAL ? "exit value out of range"
                                                            : "unknown exit kind";
    return -EBADMSG;
}

/* Size of msg's body after validating it. */
static int
body_size(const struct esc_msg *msg, size_t *size, const char **why)
{
    int rc;
    *size = 0;
    switch (msg->type) {
    case ESC_MSG_HELLO:
    case ESC_MSG_ESCALATE:
        return 0;
    case ESC_MSG_RUN:
        if (!msg->u.run_note)
            return 0;
        rc = size_str(STR_REASON, msg->u.run_note, size, why);
        break;
    case ESC_MSG_REQUEST:
        rc = size_request(&msg->u.request, size, why);
        break;
    case ESC_MSG_DENY:
        rc = size_str(STR_REASON, msg->u.deny_reason, size, why);
        break;
    case ESC_MSG_FDS:
        rc = targets_check(msg->u.fds.targets, msg->u.fds.count, why);
        if (rc == -EBADMSG)
            rc = -EINVAL;
        *size = 4 + 4 * msg->u.fds.count;
        break;
    case ESC_MSG_SIGNAL:
        rc = signal_forwardable(msg->u.signo) ? 0 : -EINVAL;
        if (rc < 0)
            *why = "signal is not one that is forwarded";
        *size = 4;
        break;
    case ESC_MSG_EXIT:
        rc = exit_check(msg->u.exit.kind, msg->u.exit.value, why) < 0 ? -EINVAL : 0;
        *size = 8;
        break;
    default:
        *why = "unknown message type";
        return -EINVAL;
    }
    if (rc == 0 && *size > ESC_MAX_BODY) {
        *why = "message body is larger than ESC_MAX_BODY";
        rc = -EMSGSIZE;
    }
    return rc;
}

static void
write_body(const struct esc_msg *msg, struct writer *w)
{
    const struct esc_request *r = &msg->u.request;
    switch (msg->type) {
    case ESC_MSG_REQUEST:
        w_str(w, r->file, strlen(r->file));
        w_u32(w, (uint32_t)r->argc);
        for (size_t i = 0; i < r->argc; i++)
            w_str(w, r->argv[i], strlen(r->argv[i]));
        w_str(w, r->workdir, strlen(r->workdir));
        w_u32(w, (uint32_t)r->envc);
        for (size_t i = 0; i < r->envc; i++)
            w_str(w, r->env[i], strlen(r->env[i]));
        break;
    case ESC_MSG_DENY:
        w_str(w, msg->u.deny_reason, strlen(msg->u.deny_reason));
        break;
    case ESC_MSG_RUN:
        if (msg->u.run_note)
            w_str(w, msg->u.run_note, strlen(msg->u.run_note));
        break;
    case ESC_MSG_FDS:
        w_u32(w, (uint32_t)msg->u.fds.count);
        for (size_t i = 0; i < msg->u.fds.count; i++)
            w_u32(w, (uint32_t)msg->u.fds.targets[i]);
        break;
    case ESC_MSG_SIGNAL:
        w_u32(w, (uint32_t)msg->u.signo);
        break;
    case ESC_MSG_EXIT:
        w_u32(w, (uint32_t)msg->u.exit.kind);
        w_u32(w, (uint32_t)msg->u.exit.value);
        break;
    default:
        break;
    }
}

int
esc_msg_encode(const struct esc_msg *msg, struct esc_buf *out, const char **why)
{
    const char *ignored;
    if (why == NULL)
        why = &ignored;
    size_t size;
    int rc = body_size(msg, &size, why);
    if (rc < 0)
        return rc;
    rc = esc_buf_reserve(out, ESC_HEADER_SIZE + size);
    if (rc < 0) {
        *why = "out of memory";
        return rc;
    }
    char *p = out->data + out->len;
    put_u32(p, (uint32_t)size);
    put_u16(p + 4, ESC_PROTO_VERSION);
    put_u16(p + 6, (uint16_t)msg->type);
    struct writer w = {p + ESC_HEADER_SIZE};
    write_body(msg, &w);
    out->len += ESC_HEADER_SIZE + size;
    return 0;
}

/* ---- decoder ---- */

static uint16_t
get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Reads a body that is complete in memory; every read is bounds-checked. */
struct reader {
    const unsigned char *p;
    size_t left;
    const char **why;
};

static int
r_u32(struct reader *r, uint32_t *v)
{
    if (r->left < 4) {
        *r->why = "body ends inside a field";
        return -EBADMSG;
    }
    *v = get_u32(r->p);
    r->p += 4;
    r->left -= 4;
    return 0;
}

/* A length-prefixed string, checked and copied with a NUL added. */
static int
r_str(struct reader *r, enum str_kind kind, char **out)
{
    uint32_t len;
    int rc = r_u32(r, &len);
    if (rc < 0)
        return rc;
    if (len > r->left) {
        *r->why = "string length runs past the end of the body";
        return -EBADMSG;
    }
    rc = str_check(kind, (const char *)r->p, len, r->why);
    if (rc < 0)
        return rc;
    char *s = malloc((size_t)len + 1);
    if (s == NULL) {
        *r->why = "out of memory";
        return -ENOMEM;
    }
    memcpy(s, r->p, len);
    s[len] = '\0';
    r->p += len;
    r->left -= len;
    *out = s;
    return 0;
}

/* A count followed by that many strings; the vector is NULL-terminated.
 * The count is checked against the bytes left (each entry needs at least
 * 4) before anything is allocated for it. */
static int
r_strvec(struct reader *r, enum str_kind kind, uint32_t min, uint32_t max, char ***out,
         size_t *count)
{
    uint32_t n;
    int rc = r_u32(r, &n);
    if (rc < 0)
        return rc;
    if (n > max) {
        *r->why = "too many argv or env entries";
        return -EMSGSIZE;
    }
    if (n < min) {
        *r->why = "argv is empty";
        return -EBADMSG;
    }
    if (n > r->left / 4) {
        *r->why = "entry count runs past the end of the body";
        return -EBADMSG;
    }
    char **v = calloc((size_t)n + 1, sizeof *v);
    if (v == NULL) {
        *r->why = "out of memory";
        return -ENOMEM;
    }
    *out = v;
    *count = n;
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = r_str(r, kind, &v[i])) < 0)
            return rc; /* the caller frees the partial vector */
    }
    return 0;
}

static int
decode_request(struct reader *r, struct esc_request *req)
{
    int rc;
    if ((rc = r_str(r, STR_FILE, &req->file)) < 0)
        return rc;
    if ((rc = r_strvec(r, STR_ARG, 1, ESC_MAX_ARGS, &req->argv, &req->argc)) < 0)
        return rc;
    if ((rc = r_str(r, STR_WORKDIR, &req->workdir)) < 0)
        return rc;
    return r_strvec(r, STR_ENV, 0, ESC_MAX_ENV, &req->env, &req->envc);
}

static int
decode_fds(struct reader *r, struct esc_msg *msg)
{
    uint32_t n;
    int rc = r_u32(r, &n);
    if (rc < 0)
        return rc;
    if (n > ESC_MAX_FDS) {
        *r->why = "more fds than ESC_MAX_FDS";
        return -EMSGSIZE;
    }
    if (n > r->left / 4) {
        *r->why = "fd count runs past the end of the body";
        return -EBADMSG;
    }
    int *t = calloc(n ? n : 1, sizeof *t);
    if (t == NULL) {
        *r->why = "out of memory";
        return -ENOMEM;
    }
    msg->u.fds.targets = t;
    msg->u.fds.count = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = 0;
        if ((rc = r_u32(r, &v)) < 0)
            return rc;
        if (v >= ESC_MAX_FD_NUMBER) {
            *r->why = "target fd number out of range";
            return -EBADMSG;
        }
        t[i] = (int)v;
    }
    return targets_check(t, n, r->why);
}

static int
decode_body(struct reader *r, struct esc_msg *msg)
{
    uint32_t a, b;
    int rc = 0;
    switch (msg->type) {
    case ESC_MSG_HELLO:
    case ESC_MSG_ESCALATE:
        break;
    case ESC_MSG_RUN:
        /* empty, or one note */
        if (r->left > 0)
            rc = r_str(r, STR_REASON, &msg->u.run_note);
        break;
    case ESC_MSG_REQUEST:
        rc = decode_request(r, &msg->u.request);
        break;
    case ESC_MSG_DENY:
        rc = r_str(r, STR_REASON, &msg->u.deny_reason);
        break;
    case ESC_MSG_FDS:
        rc = decode_fds(r, msg);
        break;
    case ESC_MSG_SIGNAL:
        if ((rc = r_u32(r, &a)) < 0)
            break;
        if (a > 64 || !signal_forwardable((int)a)) {
            *r->why = "signal is not one that is forwarded";
            return -EBADMSG;
        }
        msg->u.signo = (int)a;
        break;
    case ESC_MSG_EXIT:
        if ((rc = r_u32(r, &a)) < 0 || (rc = r_u32(r, &b)) < 0)
            break;
        if (a > 1 || b > 255 || (rc = exit_check((enum esc_exit_kind)a, b, r->why)) < 0) {
            *r->why = a > 1 ? "unknown exit kind" : "exit value out of range";
            return -EBADMSG;
        }
        msg->u.exit.kind = (enum esc_exit_kind)a;
        msg->u.exit.value = (int)b;
        break;
    }
    if (rc == 0 && r->left != 0) {
        *r->why = "trailing bytes after the message body";
        rc = -EBADMSG;
    }
    return rc;
}

int
esc_msg_decode(const void *buf, size_t len, struct esc_msg *out, size_t *consumed, const char **why)
{
    const char *ignored;
    if (why == NULL)
        why = &ignored;
    if (len < ESC_HEADER_SIZE)
        return 0;
    const unsigned char *p = buf;
    uint32_t body = get_u32(p);
    uint16_t version = get_u16(p + 4);
    uint16_t type = get_u16(p + 6);
    if (version != ESC_PROTO_VERSION) {
        *why = "protocol version mismatch";
        return -EPROTONOSUPPORT;
    }
    if (type < ESC_MSG_HELLO || type > ESC_MSG_EXIT) {
        *why = "unknown message type";
        return -EBADMSG;
    }
    if (body > ESC_MAX_BODY) {
        *why = "message body is larger than ESC_MAX_BODY";
        return -EMSGSIZE;
    }
    if (len - ESC_HEADER_SIZE < body)
        return 0;

    struct esc_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.type = (enum esc_msg_type)type;
    struct reader r = {p + ESC_HEADER_SIZE, body, why};
    int rc = decode_body(&r, &msg);
    if (rc < 0) {
        esc_msg_free(&msg);
        return rc;
    }
    *out = msg;
    *consumed = ESC_HEADER_SIZE + (size_t)body;
    return 1;
}

void
esc_msg_free(struct esc_msg *msg)
{
    if (msg == NULL)
        return;
    switch (msg->type) {
    case ESC_MSG_REQUEST:
        free(msg->u.request.file);
        strv_free_n(msg->u.request.argv, msg->u.request.argc);
        free(msg->u.request.workdir);
        strv_free_n(msg->u.request.env, msg->u.request.envc);
        break;
    case ESC_MSG_DENY:
        free(msg->u.deny_reason);
        break;
    case ESC_MSG_RUN:
        free(msg->u.run_note);
        break;
    case ESC_MSG_FDS:
        free(msg->u.fds.targets);
        break;
    default:
        break;
    }
    memset(msg, 0, sizeof *msg);
}
