/*
 * session_codex: the placeholder .codex directories a session keeps from
 * its first call that needs one until the session ends, so that its calls
 * join a placeholder already there instead of each making and removing
 * one (sandbox/placeholder.h).
 *
 * The server holds each one as a sandbox does (a shared flock on the
 * directory, opened through its root's fd): while it does, no sandbox's
 * end removes it, and each helper still holds it itself around its own
 * read-only bind, so a sandbox never relies on the server's hold.  What
 * cannot be held here (something else at the name, no right to make it)
 * is left to the helper, which decides as it always did.  When the
 * session ends, each hold ends as a sandbox's does: the placeholder goes
 * when no running sandbox holds it any more, else the last one's end
 * removes it.  A server that dies leaves what a killed helper leaves: a
 * marked placeholder the next call there takes as its own.
 */
#ifndef EXECGATE_SERVER_SESSION_CODEX_H
#define EXECGATE_SERVER_SESSION_CODEX_H

struct session_codex;

/*
 * Holds the placeholder at ROOT/.codex for each of roots (canonical
 * paths, NULL-terminated; NULL: none) not held yet, making *sc first when
 * it is NULL.  Never fails the call: what cannot be held is logged at
 * debug and left to the helper.
 */
void session_codex_hold(struct session_codex **sc, const char *const *roots);

/* The number of placeholders *sc holds (0 for NULL). */
unsigned session_codex_count(const struct session_codex *sc);

/* Ends every hold (removing each placeholder no sandbox holds) and frees
 * *sc, setting it to NULL; NULL is a no-op. */
void session_codex_release(struct session_codex **sc);

#endif
