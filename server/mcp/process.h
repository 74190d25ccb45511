/*
 * process: a command that outlives the tools/call that started it (the
 * exec_command tool), and the table of one session's processes.
 *
 * A process is a call (call.h) like any other, made by call_new under the
 * session's sandbox and rules, in a cgroup of its own, except that it has
 * no timeout, takes input (a pipe, or a terminal made inside its sandbox:
 * the helper's --tty-fd), and hands its output out as it comes: the
 * process keeps what nobody has read yet in an output_ring of the table's
 * ring_max bytes (head and tail, what falls between is counted and said).
 *
 * A process ends when its command ends, when process_kill asks, or when
 * its table ends (its session ends, the server shuts down): nothing
 * outlives its session, and the call's cgroup (and its guard, if the
 * server dies) takes whatever the command left.  An ended process stays
 * in its table, with its status and last output, until its owner has
 * told the client (process_forget).
 */
#ifndef EXECGATE_SERVER_PROCESS_H
#define EXECGATE_SERVER_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/list.h"
#include "server/call/output_ring.h"

struct call;
struct process;

/* One session's processes (embedded in the session). */
struct process_table {
    uv_loop_t *loop;
    struct list procs; /* of struct process, oldest first */
    unsigned count;    /* in procs: running or ended and not forgotten */
    unsigned live;     /* not freed yet (count, and those forgotten still closing) */
    int64_t next_id;
    size_t ring_max; /* each process's unread output, at most */
    bool ending;     /* process_table_end: every process is killed */
    /* the last process is freed, after process_table_end */
    void (*on_empty)(void *data);
    void *data;
};

/* What a process has come to. */
struct process_state {
    int64_t id;
    const char *command; /* as given (borrowed) */
    bool tty;
    bool running;      /* false: ended, and everything it printed has been read */
    int exit_code;     /* once ended: its status, or 128 + the signal */
    int term_signal;   /* once ended: the signal that ended it, or 0 */
    bool killed;       /* process_kill (or its table's end) ended it */
    const char *error; /* once ended: why it could not start; or NULL */
    bool setup_failed; /* the sandbox could not be set up (its reason is in the output) */
    uint64_t age_ms;   /* since it started */
    uint64_t unread;   /* bytes of output not read yet (those dropped included) */
};

/* An empty table whose processes keep at most ring_max (> 0) bytes of
 * unread output each.  Cannot fail. */
void process_table_init(struct process_table *t, uv_loop_t *loop, size_t ring_max,
                        void (*on_empty)(void *data), void *data);

/*
 * Starts c (call_new's, for a request with background set, and tty as
 * the request's) as a process of t, which owns it from now on: with tty
 * the command's terminal, else a pipe for its input.  Returns the process,
 * or NULL with *err (malloc'd; NULL: out of memory), c then freed.
 */
struct process *process_start(struct process_table *t, struct call *c, const char *command,
                              bool tty, char **err);

/* The process of t with this id (not forgotten), or NULL. */
struct process *process_find(struct process_table *t, int64_t id);

/* The first process of t, and the next after p: NULL at the end. */
struct process *process_first(struct process_table *t);
struct process *process_next(struct process_table *t, struct process *p);

void process_state(const struct process *p, struct process_state *st);

/*
 * Writes the n bytes at buf to p's input (its terminal: control
 * characters act as typed; what comes before the terminal does waits for
 * it, up to 64 KiB).  Returns 0, or a negative errno: -EPIPE when the
 * command no longer reads (ended, or its terminal gone), -ENOBUFS when
 * the input would pass what may wait (64 KiB for the terminal to come,
 * 1 MiB for the command to read), -ENOMEM.
 */
int process_write(struct process *p, const char *buf, size_t n);

typedef void (*process_wait_fn)(struct process *p, void *data);

/*
 * cb(p, data) once: after yield_ms, or as soon as p has ended and all its
 * output is read (at once when it has).  One waiter at a time: -EBUSY
 * when one waits already.  A table's end drops its waiters unheard.
 */
int process_wait(struct process *p, uint64_t yield_ms, process_wait_fn cb, void *data);

/* The data of p's waiter (process_wait), or NULL when none waits. */
void *process_waiter(const struct process *p);

/* Drops p's waiter: its cb is called with p NULL (nothing to answer). */
void process_unwait(struct process *p);

/* Tells p's waiter now, as if its yield time were over.  No-op when none
 * waits. */
void process_wake(struct process *p);

/* The output not read yet, in *t (borrowed until process_output_taken,
 * or p's next output). */
void process_output(struct process *p, struct output_ring_text *t);

/* What process_output gave is read: the ring is empty again. */
void process_output_taken(struct process *p);

/* Kills p's command and what runs on its behalf (SIGKILL); it ends as
 * usual.  No-op once it has ended. */
void process_kill(struct process *p);

/* An ended process whose end the client was told (or that is killed and
 * left): it leaves the table and is freed.  A running one is killed
 * first. */
void process_forget(struct process *p);

/* Kills every process of t and forgets it; nothing is waited for any
 * more.  t->on_empty follows once the last is freed, never from within
 * this call (t->live 0 now: none follows). */
void process_table_end(struct process_table *t);

#endif
