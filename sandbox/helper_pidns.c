/*
 * helper_pidns: the helper's PID namespace.  The process that unshared it
 * waits outside and forwards signals to the namespace's init; the init
 * mounts /proc, starts the command (which finishes the setup and execs)
 * and reaps until the command ends.
 */
#include "sandbox/helper_run.h"
#include "sandbox/landlock.h"

#include "common/macros.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where each process forwards signals: the init to the command, the
 * process outside the PID namespace to the init. Two variables, because
 * those two processes share their memory (run_in_pid_namespace) and each
 * names its child by its own namespace's pid. */
static volatile sig_atomic_t forward_to = -1, forward_to_init = -1;

static void
forward_signal(int sig)
{
    if (forward_to > 0)
        kill((pid_t)forward_to, sig);
}

static void
forward_signal_to_init(int sig)
{
    if (forward_to_init > 0)
        kill((pid_t)forward_to_init, sig);
}

/* Signals that ask the command to stop or that it may need to see; the
 * rest keep their defaults. */
static const int forwarded_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGWINCH};

/*
 * Blocks (block true) or unblocks the forwarded signals.  They are blocked
 * from before each fork or clone until the parent's handler is in place:
 * a signal that arrived in between would otherwise be lost — an init
 * without a handler drops what its parent namespace sends it, and a
 * SIGTERM to the outside process before its handler would end it instead
 * of reaching the command.  Blocked, it waits and is forwarded.  The child
 * unblocks them for itself.
 */
static void
block_forwarded(bool block)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
        sigaddset(&set, forwarded_signals[i]);
    if (sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL) != 0)
        sandbox_helper_die(errno, "%s the forwarded signals", block ? "blocking" : "unblocking");
}

/* Forwards the signals to child (through handler, which reads the
 * variable slot) from now on, and lets those that waited while they were
 * blocked through. */
static void
install_forwarding(volatile sig_atomic_t *slot, void (*handler)(int), pid_t child)
{
    *slot = child;
    struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
        sigaction(forwarded_signals[i], &sa, NULL);
    block_forwarded(false);
}

/* Waits for child (reaping any other child on the way, as a PID
 * namespace's init must) and returns its status, shell-style. */
static int
wait_for(pid_t child)
{
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            sandbox_helper_die(errno, "waiting for the command");
        if (w != child)
            continue;
        if (WIFEXITED(st))
            return WEXITSTATUS(st);
        if (WIFSIGNALED(st))
            return 128 + WTERMSIG(st);
    }
}

/* Waits for child as wait_for does and ends with its status. */
static noreturn void
wait_and_propagate(pid_t child)
{
    _exit(wait_for(child));
}

/* Also the exec-notify socket: only the process that becomes the command
 * sends on it, and the supervisor sees its end close when that one has. */
static void
close_report_copy(struct run *r)
{
    if (r->o->report_fd >= 0)
        close(r->o->report_fd);
    if (r->o->exec_notify_fd >= 0)
        close(r->o->exec_notify_fd);
}

static int
command_main(void *arg)
{
    block_forwarded(false); /* blocked by the init until its handler is in */
    helper_finish_and_exec(arg);
}

/* The stack the command's process runs on until its execve. */
#define COMMAND_STACK_SIZE (256 * 1024)

/*
 * Starts the command's process from the namespace's init without copying
 * the init's memory: CLONE_VM|CLONE_VFORK shares the address space and
 * suspends the init until the child has called execve or exited, so the
 * child runs as if it were the init, on a stack of its own (posix_spawn
 * does the same).  That stack is an array in this frame: the init is
 * suspended while it is in use, it costs no mmap, and it lies within the
 * thread's stack, which AddressSanitizer builds expect of every stack.
 * The child has its own file table, cwd, credentials, signal handlers and
 * seccomp/Landlock state (none of CLONE_FILES, _FS, _SIGHAND, _THREAD), so
 * what it confines is itself only.  Saves the page table copy and
 * copy-on-write faults of a fork on every spawn.  Returns the child's pid
 * in the init.
 */
static pid_t
spawn_command(struct run *r)
{
    _Alignas(16) char stack[COMMAND_STACK_SIZE];
    pid_t cmd = clone(command_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, r);
    if (cmd < 0)
        sandbox_helper_die(errno, "starting the command in the PID namespace");
    return cmd;
}

/* The namespace's init: mounts /proc, starts the command and stays to
 * reap orphans. It dies with the process outside.
 *
 * It runs outside the command's seccomp filter and Landlock domain, with
 * every capability of the user namespace the command holds them in too:
 * a command that could trace it (or take its fds, or write its memory)
 * would have it make any call and exec anything unasked.  Landlock
 * forbids tracing out of a domain, and every ABI has that rule; where
 * the command gets no Landlock (a kernel without it, --allow-degraded)
 * the init makes itself not dumpable instead, and tracing it then takes
 * CAP_SYS_PTRACE in the user namespace its memory was made in, the
 * server's, which no command holds.  Not always: the command's process
 * shares this memory until its execve, and a supervisor that takes the
 * exec listener from it by number (pidfd_getfd) needs it dumpable. */
static noreturn void
run_as_init(struct run *r)
{
    if (sandbox_ll_abi() < 1 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "PR_SET_DUMPABLE");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        sandbox_helper_die(errno, "PR_SET_PDEATHSIG");
    helper_close_placeholder_copies(r);
    int rc = sandbox_ns_mount_proc();
    if (rc < 0)
        helper_require(r, "pid-namespace-proc", "cannot mount a /proc for the PID namespace");
    r->own_proc = rc == 0;
    helper_report_namespaces(r);
    pid_t cmd = spawn_command(r);
    close_report_copy(r);
    install_forwarding(&forward_to, forward_signal, cmd);
    wait_and_propagate(cmd);
}

static int
init_main(void *arg)
{
    run_as_init(arg);
}

/* The init's stack: its own frames and spawn_command's. */
#define INIT_STACK_SIZE (COMMAND_STACK_SIZE + 128 * 1024)

/*
 * The process that unshared CLONE_NEWPID stays outside the namespace; its
 * first child is the namespace's init.  This process waits and forwards
 * signals; the init does the rest.  The init is started with CLONE_VM, on
 * a stack in this frame, rather than forked: a fork copies the page tables
 * and then takes copy-on-write faults in both processes, on every call,
 * for a process that only waits.  Sharing the memory is safe because from
 * the clone on this process changes nothing the init uses: it only closes
 * its copies of two fds (whose numbers nothing changes after the options
 * are read), installs its own signal handler (its own table: no
 * CLONE_SIGHAND) with its own variable, and waits; on an error it writes
 * to stderr and _exits, as the init would.  Only once the init is reaped
 * does it release the placeholders (release_placeholders).
 * Killing the helper's process group kills the init, and with it
 * everything inside.  Does not return.
 */
noreturn void
helper_run_in_pid_namespace(struct run *r)
{
    _Alignas(16) char stack[INIT_STACK_SIZE];
    block_forwarded(true);
    pid_t init = clone(init_main, stack + sizeof stack, CLONE_VM | SIGCHLD, r);
    if (init < 0)
        sandbox_helper_die(errno, "starting the PID namespace's init");
    close_report_copy(r);
    install_forwarding(&forward_to_init, forward_signal_to_init, init);
    int status = wait_for(init);
    /* The init is reaped: its pid may be anyone's now. */
    block_forwarded(true);
    helper_release_placeholders(r);
    _exit(status);
}
