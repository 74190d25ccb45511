/*
 * http_auth: the checks a request to the HTTP transport passes before
 * anything else — a loopback Origin and the --token-file bearer token.
 */
#ifndef EXECGATE_SERVER_HTTP_AUTH_H
#define EXECGATE_SERVER_HTTP_AUTH_H

#include <stdbool.h>

/* Random bytes in a token --token-file creates (written as hex). */
#define HTTP_AUTH_TOKEN_BYTES 32u
/* Largest token file read. */
#define HTTP_AUTH_MAX_TOKEN_FILE 4096u

/* Whether origin (an Origin header) is a loopback origin: http or https,
 * to localhost, 127.0.0.0/8 or [::1], any port. */
bool http_auth_origin_loopback(const char *origin);

/* Whether authorization (an Authorization header, or NULL) is
 * `Bearer TOKEN` with token; compared in time independent of where they
 * differ. */
bool http_auth_bearer(const char *authorization, const char *token);

/* The token in path (created, mode 0600, when missing): its first line,
 * blanks trimmed, at least 16 characters.  NULL with *err (malloc'd). */
char *http_auth_load_token(const char *path, char **err);

#endif
