/*
 * approvals: commands a person approved "for the session"
 * (`approved_for_session` in an elicitation answer), remembered for the rest
 * of this server's life by their key (approvals_key: decide_exec.c keys a
 * command by its canonical program, that file's device and inode, and
 * argv[1..]; argv[0] and the environment do not matter).  In memory only.
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

/* Remembers key[0..len) (copied).  Returns 0, or -1 when out of memory
 * (nothing remembered). */
int approvals_add(struct approvals *a, const char *key, size_t len);

/* Whether key[0..len) was approved for the session.  Cannot fail. */
bool approvals_contains(const struct approvals *a, const char *key, size_t len);

/* The key a command is compared by: program and args[0..n), each with its
 * NUL, packed into one malloc'd buffer (the caller frees); *len its size.
 * NULL when out of memory. */
char *approvals_key(const char *program, const char *const *args, size_t n, size_t *len);

#endif
