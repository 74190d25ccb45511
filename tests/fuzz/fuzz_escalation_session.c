/*
 * libFuzzer target for the server's side of an exec session, through the
 * real code on a real loop. The first byte of an input chooses how the
 * session opens: even, a valid HELLO, and the rest is the byte stream a
 * peer in the sandbox sends on the session; odd, the rest (at most
 * ESC_MAX_DGRAM + 1 bytes) is the first datagram itself, carrying the
 * session's fd (protocol 2's REQUEST datagram, or anything else). Then the
 * end of the stream.  The server must decode, decide, answer or end the session,
 * and free everything (LeakSanitizer), whatever arrives.  The rules deny
 * `rm` and allow only `true`, so a decoded request can at most escalate
 * /bin/true; there is no MCP client, so `prompt` is a Deny.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "sandbox/policy/policy.h"
#include "server/decide/decide.h"
#include "proto/esc_io.h"
#include "server/decide/escalation.h"
#include "common/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static struct decide_server *ds;
static json_t *policy;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[] = "/tmp/execgate-fuzz-rules-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char path[sizeof(dir) + 16];
    snprintf(path, sizeof(path), "%s/f.rules", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs("prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
          "prefix_rule(pattern=[\"git\"], decision=\"prompt\")\n"
          "prefix_rule(pattern=[\"true\"], decision=\"allow\")\n",
          f);
    fclose(f);
    log_set_level(LOG_LEVEL_ERROR);
    uv_loop_init(&loop);
    const char *paths[] = {path};
    struct decide_config cfg = {.rules_paths = paths, .n_rules_paths = 1};
    char *err = NULL;
    ds = decide_server_new(&cfg, &err);
    if (!ds)
        abort();
    unlink(path);
    rmdir(dir);
    policy = json_pack("{s:s}", "type", "read-only");
    return 0;
}

/* Sends the first datagram (a HELLO when first is NULL) with one end of a
 * fresh stream pair; returns the other. */
static int
open_session(int dgram, const uint8_t *first, size_t len)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
        abort();
    struct esc_buf hello = {0};
    struct esc_msg m = {.type = ESC_MSG_HELLO};
    if (!first && esc_msg_encode(&m, &hello, NULL) < 0)
        abort();
    if (esc_io_send_all(dgram, first ? (const void *)first : hello.data, first ? len : hello.len,
                        &pair[1], 1) < 0)
        abort();
    esc_buf_free(&hello);
    close(pair[1]);
    return pair[0];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *err = NULL;
    struct sandbox_policy *p = sandbox_policy_from_json(policy, "/", &err);
    struct decide_call *dc = p ? decide_call_new(ds, p, NULL, "fuzz", NULL, NULL, &err) : NULL;
    sandbox_policy_free(p);
    struct escalation_call *ec = dc ? escalation_call_new(&loop, dc, NULL, NULL, NULL, 0) : NULL;
    decide_call_unref(dc);
    if (!ec)
        abort();
    int child = -1;
    if (escalation_call_serve_detached(ec, &child) < 0)
        abort();
    bool dgram_mode = size > 0 && (data[0] & 1);
    if (size > 0) {
        data++;
        size--;
    }
    if (dgram_mode && size > ESC_MAX_DGRAM + 1)
        size = ESC_MAX_DGRAM + 1;
    int peer = open_session(child, dgram_mode ? data : NULL, size);
    if (dgram_mode)
        size = 0; /* the stream carries nothing more */
    fcntl(peer, F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    bool closed = false;
    /* feed the bytes as the server takes them, then the end of the stream;
     * done when the server closes the session (EOF on our end) */
    for (int round = 0; round < 10000 && !closed; round++) {
        if (sent < size) {
            ssize_t n = send(peer, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            else if (n < 0 && errno != EAGAIN)
                sent = size; /* the server ended the session */
            if (sent == size)
                shutdown(peer, SHUT_WR);
        } else if (size == 0 && round == 0) {
            shutdown(peer, SHUT_WR);
        }
        uv_run(&loop, UV_RUN_NOWAIT);
        char buf[256];
        ssize_t n = recv(peer, buf, sizeof(buf), MSG_DONTWAIT);
        closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        if (!closed && sent == size) {
            struct pollfd pfd = {.fd = peer, .events = POLLIN};
            poll(&pfd, 1, 1); /* an escalated /bin/true may be running */
        }
    }
    close(peer);
    escalation_call_end_detached(ec);
    uv_run(&loop, UV_RUN_DEFAULT);
    return 0;
}
