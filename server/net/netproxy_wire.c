#include "server/net/netproxy_conn.h"

#include "server/net/nethost.h"
#include "common/macros.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- HTTP heads ---- */

static struct conn *
conn_of(http_parser *hp)
{
    return hp->data;
}

static int
on_url(http_parser *hp, const char *at, size_t len)
{
    struct conn *c = conn_of(hp);
    size_t off = (size_t)(at - c->in.data);
    if (c->url.len && c->url.off + c->url.len == off)
        c->url.len += len;
    else
        c->url = (struct span){off, len};
    return 0;
}

static int
add_span(struct conn *c, const char *at, size_t len, bool value)
{
    size_t off = (size_t)(at - c->in.data);
    if (value == c->in_value && c->n_hdrs > 0) {
        struct span *s = &c->hdrs[c->n_hdrs - 1];
        if (s->off + s->len == off) {
            s->len += len;
            return 0;
        }
    }
    if (!value && c->n_hdrs % 2 == 1)
        return -1; /* a name without a value cannot happen; refuse it if it does */
    if (c->n_hdrs == c->cap_hdrs) {
        size_t cap = c->cap_hdrs ? 2 * c->cap_hdrs : 32;
        struct span *h = realloc(c->hdrs, cap * sizeof *h);
        if (!h)
            return -1;
        c->hdrs = h;
        c->cap_hdrs = cap;
    }
    c->hdrs[c->n_hdrs++] = (struct span){off, len};
    c->in_value = value;
    return 0;
}

static int
on_field(http_parser *hp, const char *at, size_t len)
{
    return add_span(conn_of(hp), at, len, false);
}

static int
on_value(http_parser *hp, const char *at, size_t len)
{
    struct conn *c = conn_of(hp);
    if (c->n_hdrs % 2 == 1 || (c->in_value && c->n_hdrs > 0))
        return add_span(c, at, len, true);
    return -1;
}

static int
on_headers_complete(http_parser *hp)
{
    http_parser_pause(hp, 1);
    return 0;
}

static int
on_message_complete(http_parser *hp)
{
    http_parser_pause(hp, 1);
    return 0;
}

/* After the head: only the message's end matters (the body's bytes are
 * passed on as they came, chunked or not). */
const http_parser_settings proxy_body_settings = {
    .on_message_complete = on_message_complete,
};

static const http_parser_settings head_settings = {
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static bool
span_is(const struct conn *c, struct span s, const char *word)
{
    return s.len == strlen(word) && strncasecmp(c->in.data + s.off, word, s.len) == 0;
}

/* Hop-by-hop and proxy headers, not passed on. */
static bool
dropped_header(const struct conn *c, struct span name)
{
    static const char *const drop[] = {"connection", "proxy-connection", "proxy-authorization",
                                       "keep-alive", "upgrade",          "te"};
    for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
        if (span_is(c, name, drop[i]))
            return true;
    return false;
}

/* Builds the origin-form head for upstream.  Returns 0 or -1 (OOM). */
static int
build_out_head(struct conn *c, const char *path, size_t n_path, bool have_host)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return -1;
    fprintf(f, "%s %.*s HTTP/1.1\r\n", http_method_str((enum http_method)c->hp.method), (int)n_path,
            path);
    for (size_t i = 0; i + 1 < c->n_hdrs; i += 2) {
        struct span n = c->hdrs[i], v = c->hdrs[i + 1];
        if (!dropped_header(c, n))
            fprintf(f, "%.*s: %.*s\r\n", (int)n.len, c->in.data + n.off, (int)v.len,
                    c->in.data + v.off);
    }
    if (!have_host)
        fprintf(f, "Host: %s:%u\r\n", c->host, c->port);
    fputs("Connection: close\r\n\r\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    c->out_head = buf;
    return 0;
}

void
proxy_parse_head(struct conn *c)
{
    http_parser_init(&c->hp, HTTP_REQUEST);
    c->hp.data = c;
    size_t n = http_parser_execute(&c->hp, &head_settings, c->in.data, c->in.len);
    if (HTTP_PARSER_ERRNO(&c->hp) != HPE_PAUSED || c->url.len == 0) {
        proxy_refuse(c, 400, 0, "execgate: the proxy could not parse this request");
        return;
    }
    c->rest_off = n + 1; /* the parser paused on the head's last byte */
    const char *url = c->in.data + c->url.off;
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (c->hp.method == HTTP_CONNECT) {
        c->kind = K_CONNECT;
        if (http_parser_parse_url(url, c->url.len, 1, &u) != 0) {
            proxy_refuse(c, 400, 0, "execgate: CONNECT needs HOST:PORT");
            return;
        }
        proxy_destination(c, url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len, u.port,
                          "https");
        return;
    }
    c->kind = K_HTTP;
    struct span host_hdr = {0, 0};
    bool have_host = false;
    for (size_t i = 0; i + 1 < c->n_hdrs; i += 2)
        if (span_is(c, c->hdrs[i], "host")) {
            host_hdr = c->hdrs[i + 1];
            have_host = true;
        }
    if (http_parser_parse_url(url, c->url.len, 0, &u) != 0 || !(u.field_set & (1 << UF_SCHEMA)) ||
        !(u.field_set & (1 << UF_HOST))) {
        proxy_refuse(c, 400, 0,
                     "execgate: a request through the proxy needs an absolute http:// URL (use "
                     "CONNECT for https)");
        return;
    }
    if (u.field_data[UF_SCHEMA].len != 4 ||
        strncasecmp(url + u.field_data[UF_SCHEMA].off, "http", 4) != 0) {
        proxy_refuse(c, 400, 0,
                     "execgate: only http:// URLs are forwarded (use CONNECT for https)");
        return;
    }
    const char *host = url + u.field_data[UF_HOST].off;
    size_t n_host = u.field_data[UF_HOST].len;
    unsigned port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
    if (have_host) {
        /* The Host header must name the host connected to: a request
         * cannot be decided for one host and sent as another. */
        struct http_parser_url hu;
        http_parser_url_init(&hu);
        char *h = nethost_normalize(host, n_host);
        const char *hv = c->in.data + host_hdr.off;
        bool same = false;
        if (h && http_parser_parse_url(hv, host_hdr.len, 1, &hu) == 0) {
            char *hh =
                nethost_normalize(hv + hu.field_data[UF_HOST].off, hu.field_data[UF_HOST].len);
            same = hh && strcmp(hh, h) == 0;
            free(hh);
        } else if (h) {
            char *hh = nethost_normalize(hv, host_hdr.len);
            same = hh && strcmp(hh, h) == 0;
            free(hh);
        }
        free(h);
        if (!same) {
            proxy_refuse(c, 400, 0, "execgate: the Host header names another host than the URL");
            return;
        }
    }
    const char *path = "/";
    size_t n_path = 1;
    if (u.field_set & (1 << UF_PATH)) {
        path = url + u.field_data[UF_PATH].off;
        n_path = c->url.len - u.field_data[UF_PATH].off;
        if (u.field_set & (1 << UF_FRAGMENT))
            n_path = u.field_data[UF_FRAGMENT].off - 1 - u.field_data[UF_PATH].off;
    }
    c->host = nethost_normalize(host, n_host);
    if (!c->host) {
        proxy_refuse(c, 400, 0, "execgate: the destination is not a host name or address");
        return;
    }
    c->port = port;
    if (build_out_head(c, path, n_path, have_host) < 0) {
        proxy_conn_close(c);
        return;
    }
    char *h = c->host;
    c->host = NULL;
    proxy_destination(c, h, strlen(h), port, "http");
    free(h);
}

/* ---- SOCKS5 ---- */

void
proxy_socks_input(struct conn *c)
{
    const unsigned char *b = (const unsigned char *)c->in.data;
    if (c->st == ST_SOCKS_GREET) {
        if (c->in.len < 2 || c->in.len < 2u + b[1])
            return;
        bool no_auth = false;
        for (size_t i = 0; i < b[1]; i++)
            no_auth = no_auth || b[2 + i] == 0;
        if (!no_auth) {
            static const unsigned char none[2] = {5, 0xff};
            uv_read_stop((uv_stream_t *)&c->c.tcp);
            c->st = ST_REFUSING;
            if (proxy_send_copy(c, &c->c, none, 2) == 0)
                proxy_side_shutdown(c, &c->c);
            return;
        }
        static const unsigned char ok[2] = {5, 0};
        size_t used = 2u + b[1];
        /* the NUL after the bytes moves with them (buf.h) */
        memmove(c->in.data, c->in.data + used, c->in.len - used + 1);
        c->in.len -= used;
        c->st = ST_SOCKS_REQ;
        if (proxy_send_copy(c, &c->c, ok, 2) < 0)
            return;
        b = (const unsigned char *)c->in.data;
    }
    if (c->in.len < 5)
        return;
    if (b[0] != 5) {
        proxy_conn_close(c);
        return;
    }
    size_t need;
    switch (b[3]) {
    case 1:
        need = 4 + 4 + 2;
        break;
    case 3:
        need = 5u + b[4] + 2;
        break;
    case 4:
        need = 4 + 16 + 2;
        break;
    default:
        proxy_refuse(c, 0, SOCKS_ATYP_UNSUPPORTED, "");
        return;
    }
    if (c->in.len < need)
        return;
    if (b[1] != 1) { /* only CONNECT: no rule here reaches UDP or BIND */
        proxy_refuse(c, 0, SOCKS_CMD_UNSUPPORTED, "");
        return;
    }
    uv_read_stop((uv_stream_t *)&c->c.tcp);
    c->rest_off = need;
    unsigned port = (unsigned)b[need - 2] << 8 | b[need - 1];
    char addr[INET6_ADDRSTRLEN];
    if (b[3] == 3) {
        proxy_destination(c, (const char *)b + 5, b[4], port, "socks5_tcp");
        return;
    }
    if (!inet_ntop(b[3] == 1 ? AF_INET : AF_INET6, b + 4, addr, sizeof addr)) {
        proxy_refuse(c, 0, SOCKS_FAILURE, "");
        return;
    }
    proxy_destination(c, addr, strlen(addr), port, "socks5_tcp");
}
