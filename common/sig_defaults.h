/*
 * sig_defaults: every signal disposition of the calling process back to
 * SIG_DFL, touching only those that are not the default already.
 *
 * The kernel lists the signals a process ignores (SigIgn) and catches
 * (SigCgt) in /proc/self/status: one read of that file costs about half
 * of the 62 sigaction calls that would reset every signal blindly.  When
 * the file cannot be read or does not say (no /proc), every signal is
 * reset, as before.  No allocation: a clone child that shares the
 * server's memory calls it before its execve.
 */
#ifndef EXECGATE_COMMON_SIG_DEFAULTS_H
#define EXECGATE_COMMON_SIG_DEFAULTS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The hexadecimal mask after "\nNAME:\t" in text into *mask; false when
 * the field is not there or is not 1 to 16 hex digits. */
static inline bool
sig_defaults_field(const char *text, const char *name, uint64_t *mask)
{
    const char *at = strstr(text, name);
    if (at == NULL)
        return false;
    at += strlen(name);
    uint64_t m = 0;
    int digits = 0;
    for (; digits < 17; digits++, at++) {
        char c = *at;
        unsigned v = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                            : 16u;
        if (v == 16u)
            break;
        m = m << 4 | v;
    }
    if (digits == 0 || digits > 16 || (*at != '\n' && *at != '\0'))
        return false;
    *mask = m;
    return true;
}

/* The signals not at their default disposition (bit s-1 for signal s):
 * with caught, those caught as well as those ignored.  Returns false when
 * /proc/self/status could not tell. */
static inline bool
sig_defaults_changed(bool caught, uint64_t *mask)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    buf[len] = '\0';
    uint64_t ign = 0, cgt = 0;
    if (!sig_defaults_field(buf, "\nSigIgn:\t", &ign) ||
        (caught && !sig_defaults_field(buf, "\nSigCgt:\t", &cgt)))
        return false;
    *mask = ign | cgt;
    return true;
}

/*
 * A signal libc keeps for itself (glibc's and musl's 32 and 33, musl's 34
 * too), which its sigaction refuses (EINVAL), back to SIG_DFL by the
 * system call itself.  glibc's posix_spawn leaves those two ignored in
 * what it starts, and an ignored signal stays ignored across execve.  The
 * kernel's struct, on the architectures where its layout is the generic
 * one; elsewhere they stay as they are.
 */
static inline void
sig_defaults_reserved(int s)
{
#if defined(__x86_64__) || defined(__aarch64__)
    struct {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
    } dfl = {.handler = SIG_DFL};
    (void)syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof dfl.mask);
#else
    (void)s;
#endif
}

/*
 * Resets to SIG_DFL each signal the process ignores and, with caught, each
 * it catches (after an execve only ignored ones are left: the kernel has
 * reset the caught ones); every signal when the kernel's list could not be
 * read.  The ones libc refuses to touch go by the system call.
 */
static inline void
sig_defaults_restore(bool caught)
{
    uint64_t mask = ~(uint64_t)0;
    if (!sig_defaults_changed(caught, &mask))
        mask = ~(uint64_t)0;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG && s <= 64; s++) {
        if (s == SIGKILL || s == SIGSTOP || !(mask >> (s - 1) & 1))
            continue;
        if (sigaction(s, &dfl, NULL) != 0 && errno == EINVAL)
            sig_defaults_reserved(s);
    }
}

#endif
