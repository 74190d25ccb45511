/*
 * fake_escalation_server: a stand-in for execgate's server side of the
 * escalation protocol, for tests and the wrapper benchmark.
 *
 * It answers each exec from a table keyed by the program's basename and
 * records what it saw. It uses the real codec (esc_proto, esc_io), runs in
 * its own threads (one per session, so pipelines work), and on Escalate runs
 * the program itself with the received fds at their original numbers, the
 * request's argv, env and workdir, forwards SIGNAL messages to it with
 * kill(2), and returns its status. Resource failures abort: a test without
 * its server cannot say anything useful.
 */
#ifndef EXECGATE_TESTS_FAKE_ESCALATION_SERVER_H
#define EXECGATE_TESTS_FAKE_ESCALATION_SERVER_H

#include <stddef.h>
#include <sys/types.h>

enum fake_esc_action {
    FAKE_ESC_RUN,      /* the default for programs not in the table */
    FAKE_ESC_ESCALATE, /* run it here and return the status */
    FAKE_ESC_DENY,     /* DENY with the rule's reason */
    /* Misbehaving servers: */
    FAKE_ESC_HANGUP,          /* close the session after reading the request */
    FAKE_ESC_GARBAGE,         /* answer with bytes that are not a frame */
    FAKE_ESC_BAD_VERSION,     /* answer RUN with another protocol version */
    FAKE_ESC_WRONG_REPLY,     /* answer with an EXIT where a decision belongs */
    FAKE_ESC_ESCALATE_HANGUP, /* say ESCALATE, take the fds, then close */
    FAKE_ESC_ESCALATE_SIGNAL, /* ESCALATE, then send `signo` to the wrapper */
};

struct fake_esc_rule {
    const char *basename;
    enum fake_esc_action action;
    const char *reason; /* FAKE_ESC_DENY */
    int signo;          /* FAKE_ESC_ESCALATE_SIGNAL */
    int signo2;         /* ... and then this one, when not 0 */
};

/* What one session looked like, for assertions. */
struct fake_esc_record {
    char *file;
    char **argv; /* NULL-terminated */
    size_t argc;
    char *workdir;
    char **env;            /* NULL-terminated */
    int request_on_stream; /* 1: HELLO, then the REQUEST on the stream; 0: REQUEST datagram */
    enum fake_esc_action action;
    pid_t wrapper_pid; /* from SO_PEERCRED of the session socket */
    pid_t program_pid; /* escalated program, else 0 */
    int targets[128];  /* fd numbers received with FDS */
    size_t ntargets;
    int signals[8]; /* SIGNAL messages forwarded */
    size_t nsignals;
    int status; /* escalated program's wait status */
};

struct fake_esc_server;

/*
 * Starts a server answering from rules[0..nrules) (copied by reference: the
 * table must outlive the server). *client_fd is the wrapper's end of the
 * datagram socket, deliberately NOT close-on-exec so that spawned shells
 * inherit it; the server closes it in fake_esc_server_stop.
 */
struct fake_esc_server *fake_esc_server_start(const struct fake_esc_rule *rules, size_t nrules,
                                              int *client_fd);

/* Waits for every session to end, then frees the server and its records.
 * NULL is a no-op. */
void fake_esc_server_stop(struct fake_esc_server *srv);

/* Number of sessions that finished. Records are borrowed, valid until stop;
 * index in order of completion. */
size_t fake_esc_server_count(struct fake_esc_server *srv);
const struct fake_esc_record *fake_esc_server_record(struct fake_esc_server *srv, size_t i);

/* The first finished record whose file has this basename, or NULL. */
const struct fake_esc_record *fake_esc_server_find(struct fake_esc_server *srv,
                                                   const char *basename);

#endif
