/*
 * approvals: commands a person approved "for the session"
 * (`approved_for_session` in an elicitation answer), remembered for the rest
 * of this server's life.  A later exec is approved without asking when it
 * runs the same resolved program with the same arguments (argv[1..]); argv[0]
 * and the environment do not matter.  In memory only.
 */
#ifndef EXECGATE_SERVER_APPROVALS_H
#define EXECGATE_SERVER_APPROVALS_H

#include <stdbool.h>
#include <stddef.h>

struct approvals;

/* An empty set, or NULL when out of memory. */
struct approvals *approvals_new(void);

/* Frees the set; NULL is a no-op. */
void approvals_free(struct approvals *a);

/* Remembers program + args[0..n) (copied).  Returns 0, or -1 when out of
 * memory (nothing remembered). */
int approvals_add(struct approvals *a, const char *program, const char *const *args, size_t n);

/* Whether program + args[0..n) was approved for the session. Cannot fail. */
bool approvals_contains(const struct approvals *a, const char *program, const char *const *args,
                        size_t n);

/* The key a command is compared by: program and args[0..n), each with its
 * NUL, packed into one malloc'd buffer (the caller frees); *len its size.
 * NULL when out of memory.  exec_watch's memos use the same key. */
char *approvals_key(const char *program, const char *const *args, size_t n, size_t *len);

#endif
