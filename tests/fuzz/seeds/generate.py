#!/usr/bin/env python3
"""Writes the binary seed inputs of the fuzz targets.

tests/fuzz/seeds/<target>/ holds each target's seeds; the ones made of
escalation frames, hand-over datagrams or NUL-separated argv are written
here, from the layouts in docs/escalation-protocol.md and
docs/enforcement.md, so that they can be read and changed as code.  Run it
from anywhere after changing the protocol; it rewrites only its own files.
"""
import os
import struct
import sys

VERSION = 2
HELLO, REQUEST, RUN, ESCALATE, DENY, FDS, SIGNAL, EXIT = range(1, 9)


def frame(kind, body=b"", version=VERSION):
    return struct.pack("<IHH", len(body), version, kind) + body


def u32(n):
    return struct.pack("<I", n)


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return u32(len(b)) + b


def request(file, argv, workdir="/", env=()):
    body = string(file) + u32(len(argv)) + b"".join(string(a) for a in argv)
    body += string(workdir) + u32(len(env)) + b"".join(string(e) for e in env)
    return frame(REQUEST, body)


ENV = ("PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/me", "LANG=C.UTF-8")

# fuzz_esc_msg: a stream of frames from an untrusted peer.
esc_msg = {
    "hello": frame(HELLO),
    "request-ls": request("/bin/ls", ["ls"], "/", ["A=b"]),
    "request-git": request("/usr/bin/git", ["git", "status", "--short"], "/home/me/src", ENV),
    "request-no-env": request("/bin/true", ["true"]),
    "run": frame(RUN),
    "escalate": frame(ESCALATE),
    "deny": frame(DENY, string("rm -rf is forbidden by a rule")),
    "deny-utf8": frame(DENY, string("refus\u00e9 \u2713 \U0001f600")),
    "fds": frame(FDS, u32(3) + u32(0) + u32(1) + u32(2)),
    "fds-none": frame(FDS, u32(0)),
    "signal": frame(SIGNAL, u32(15)),
    "exit-code": frame(EXIT, u32(0) + u32(1)),
    "exit-signal": frame(EXIT, u32(1) + u32(9)),
    "session": frame(HELLO)
    + request("/bin/cat", ["cat", "-n", "a b"], "/tmp", ENV)
    + frame(FDS, u32(2) + u32(1) + u32(2))
    + frame(SIGNAL, u32(2)),
    "answers": frame(ESCALATE) + frame(EXIT, u32(0) + u32(0)),
    "old-version": frame(REQUEST, string("/bin/ls"), version=1),
    "cut-request": request("/bin/ls", ["ls", "-l"], "/", ENV)[:30],
}

# fuzz_escalation_session: an even first byte opens with a HELLO and the
# rest is the session's stream; an odd one makes the rest the first
# datagram.  The target's rules forbid rm, prompt for git, allow true.
true_req = request("/bin/true", ["true"], "/", ENV)
escalation_session = {
    "stream-true": b"\0" + true_req,
    "stream-true-fds": b"\0" + true_req + frame(FDS, u32(0)),
    "stream-true-signal": b"\0" + true_req + frame(FDS, u32(0)) + frame(SIGNAL, u32(15)),
    "stream-rm": b"\0" + request("/bin/rm", ["rm", "-rf", "/tmp/x"], "/tmp", ENV),
    "stream-git": b"\0" + request("/usr/bin/git", ["git", "push"], "/", ENV),
    "stream-ls": b"\0" + request("/bin/ls", ["ls", "-l"], "/", ENV),
    "stream-sh-rm": b"\0" + request("/bin/sh", ["sh", "-c", "rm -f a"], "/", ENV),
    "stream-env": b"\0"
    + request("/bin/true", ["true"], "/", ENV + ("LD_PRELOAD=/x.so", "BASH_ENV=/x")),
    "stream-hello": b"\0" + frame(HELLO),
    "stream-fds-first": b"\0" + frame(FDS, u32(0)),
    "stream-two-requests": b"\0" + true_req + true_req,
    "dgram-true": b"\1" + true_req,
    "dgram-rm": b"\1" + request("/usr/bin/rm", ["rm", "-f", "a"], "/", ENV),
    "dgram-ls": b"\1" + request("/bin/ls", ["ls"], "/tmp"),
    "dgram-hello": b"\1" + frame(HELLO),
    "dgram-run": b"\1" + frame(RUN),
}

# fuzz_exec_notify: the first byte is the number of fds sent along (mod 3),
# the rest the helper's datagram: "EGX1", L (listener) or D (degraded), path.
# An 'l' (a retired kind: the helper's exec by fd) must be refused.
exec_notify = {
    "listener": b"\1EGX1L/usr/libexec/execgate/bash",
    "degraded": b"\0EGX1D/bin/bash",
    "listener-no-fd": b"\0EGX1L/bin/sh",
    "degraded-with-fd": b"\1EGX1D/bin/sh",
    "two-fds": b"\2EGX1L/bin/sh",
    "nul-in-path": b"\1EGX1L/bin\0sh",
    "bad-magic": b"\1EGX0L/bin/sh",
    "short": b"\0EGX1",
    "empty-path": b"\1EGX1L",
    "long-path": b"\1EGX1L/" + b"a" * 4200,
    "retired-l-kind": b"\1EGX1l",
    "retired-l-kind-path": b"\1EGX1l/bin/sh",
}


def words(*argv):
    return b"\0".join(a.encode() for a in argv)


# fuzz_exec_checks: argv words separated by NUL bytes; each word is also
# checked as an environment entry.
exec_checks = {
    "rm-f": words("rm", "-f", "a"),
    "rm-rf-path": words("/bin/rm", "-rf", "a"),
    "rm-split": words("rm", "-r", "-f", "a"),
    "rm-force": words("rm", "--force", "a"),
    "rm-dashdash": words("rm", "--", "-f"),
    "sudo-rm": words("sudo", "-n", "/usr/bin/rm", "-Rf", "a"),
    "sh-c": words("sh", "-c", "rm -f a"),
    "bash-lc": words("bash", "-lc", "echo x; rm -rf /tmp/y"),
    "bash-and": words("bash", "-c", "true && sudo rm --force z"),
    "nested": words("sh", "-c", "sh -c \"sh -c 'rm -f a'\""),
    "pipes": words("sh", "-c", "ls|rm -f a;ls&&rm -f b"),
    "unclosed": words("sh", "-c", "rm 'unclosed -f"),
    "python": words("python3", "-c", "rm -f a"),
    "env": words(
        "env",
        "LD_PRELOAD=/x.so",
        "BASH_ENV=/x",
        "BASH_FUNC_ls%%=() { :; }",
        "GIT_CONFIG_COUNT=1",
        "CODEX_ESCALATE_SOCKET=4",
        "ENV",
        "HOME=/root",
    ),
}


# fuzz_http_conn: a config byte (bits 0-3: how the handler answers, 0
# whole, 1 stream, 2 a turn late, 3 streamed late, 4 close, 5 finish, 6
# mixed; 0x10: a 16-byte body limit; 0x20: the client does not
# half-close), then a client's bytes.
def post(body, path="/mcp", extra=b""):
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
http_conn = {
    "get": b"\x00GET /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: abc\r\n\r\n",
    "post": b"\x00" + post(INIT),
    "post-stream": b"\x01" + post(INIT, extra=b"Mcp-Session-Id: s1\r\n"),
    "pipelined-later": b"\x02" + post(INIT) + post(b"{}") + b"DELETE /mcp HTTP/1.1\r\nHost: x\r\n\r\n",
    "pipelined-mixed": b"\x26" + post(b"[1]") + post(b"[2]") + post(b"[3]"),
    "streamed-late": b"\x03" + post(INIT) + post(b"{}"),
    "chunked": b"\x00POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n1a;ext=1\r\n" + b"a" * 26 + b"\r\n0\r\nTrailer: t\r\n\r\n",
    "too-large-body": b"\x10" + post(b"x" * 40),
    "chunked-too-large": b"\x10POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n"
                         + b"y" * 32 + b"\r\n0\r\n\r\n",
    "close": b"\x04" + post(b"{}") + post(b"{}"),
    "finish": b"\x05GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    "http10": b"\x20GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
    "bad": b"\x00GARBAGE\r\n\r\n",
    "folded-header": b"\x00GET / HTTP/1.1\r\nX-A: one\r\n two\r\nX-B:\t\r\n\r\n",
    "upgrade": b"\x00GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nrest",
    "connect": b"\x00CONNECT example.com:443 HTTP/1.1\r\n\r\n",
    "keepalive-open": b"\x20" + post(INIT),
}

# fuzz_netproxy: a config byte (bit 0: questions answered at once, else a
# few rounds later; bits 1-2: 0 no, 1 nobody asked, 2 yes, 3 yes for the
# session (yes only for IP literals in the target's own namespace); 0x08:
# no splice; 0x10: the client does not half-close), then a sandboxed
# command's bytes.  127.0.0.1:8080 is the target's own upstream.
def socks_req(atyp, addr, port, cmd=1):
    if atyp == 3:
        addr = bytes([len(addr)]) + addr
    return bytes([5, cmd, 0, atyp]) + addr + struct.pack(">H", port)


GREET = b"\x05\x01\x00"
netproxy = {
    "http-get": b"\x00GET http://127.0.0.1:8080/a?b=c HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                b"Proxy-Connection: keep-alive\r\nUser-Agent: curl\r\n\r\n",
    "http-post-chunked": b"\x08POST http://127.0.0.1:8080/p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"4\r\nabcd\r\n0\r\n\r\nGET http://127.0.0.1:8080/ HTTP/1.1\r\n\r\n",
    "http-post-length": b"\x10POST http://127.0.0.1:8080/p#frag HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    "http-host-mismatch": b"\x00GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "http-no-rule": b"\x00GET http://unknown.test/ HTTP/1.1\r\n\r\n",
    "http-forbidden": b"\x00GET http://EVIL.example./x HTTP/1.1\r\n\r\n",
    "http-origin-form": b"\x00GET /x HTTP/1.1\r\nHost: a\r\n\r\n",
    "http-https-url": b"\x00GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
    "http-lf-only": b"\x00GET http://[::1]:8080/ HTTP/1.1\nHost: [::1]:8080\n\n",
    "http-prompt-later": b"\x04GET http://127.0.0.2:8080/ HTTP/1.1\r\n\r\n",
    "http-prompt-session": b"\x07GET http://127.0.0.2:8080/ HTTP/1.1\r\n\r\n",
    "connect": b"\x00CONNECT 127.0.0.1:8080 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\nearly bytes",
    "connect-no-splice": b"\x08CONNECT 127.0.0.1:8080 HTTP/1.1\r\n\r\ntunnelled",
    "connect-refused-port": b"\x00CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n",
    "connect-prompt-name": b"\x05CONNECT example.com:443 HTTP/1.1\r\n\r\n",
    "connect-prompt-private": b"\x05CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n",
    "connect-no-port": b"\x00CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n",
    "connect-ipv6": b"\x10CONNECT [::1]:8080 HTTP/1.1\r\n\r\nx",
    "socks-ipv4": b"\x00" + GREET + socks_req(1, bytes([127, 0, 0, 1]), 8080) + b"payload",
    "socks-name": b"\x08" + GREET + socks_req(3, b"127.0.0.1", 8080) + b"payload",
    "socks-ipv6": b"\x00\x05\x02\x02\x00" + socks_req(4, bytes(15) + b"\x01", 8080),
    "socks-forbidden": b"\x00" + GREET + socks_req(3, b"evil.example", 443),
    "socks-prompt": b"\x02" + GREET + socks_req(1, bytes([127, 0, 0, 2]), 8080),
    "socks-auth-only": b"\x00\x05\x01\x02",
    "socks-bind": b"\x00" + GREET + socks_req(1, bytes([127, 0, 0, 1]), 8080, cmd=2),
    "socks-bad-atyp": b"\x00" + GREET + b"\x05\x01\x00\x09\x00\x00",
    "socks-port-zero": b"\x00" + GREET + socks_req(1, bytes([127, 0, 0, 1]), 0),
    "socks-split": b"\x10\x05\x01",
}


def write(root, target, seeds):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def main():
    root = os.path.dirname(os.path.abspath(sys.argv[0]))
    write(root, "esc_msg", esc_msg)
    write(root, "escalation_session", escalation_session)
    write(root, "exec_notify", exec_notify)
    write(root, "exec_checks", exec_checks)
    write(root, "http_conn", http_conn)
    write(root, "netproxy", netproxy)


if __name__ == "__main__":
    main()
