#!/usr/bin/env python3
"""Test servers for the network proxy's integration tests, on loopback only.

An HTTP server (GET /NAME answers "page NAME") and an echo server (each
connection gets back what it sends, and its half-close), on ports the
kernel chooses; prints "HTTP_PORT ECHO_PORT" and serves until stdin closes.
"""
import http.server
import socket
import socketserver
import sys
import threading


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("page %s\n" % self.path.lstrip("/")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                break
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)


class ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    echo = ThreadingTCP(("127.0.0.1", 0), Echo)
    for s in (web, echo):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(web.server_address[1], echo.server_address[1], flush=True)
    sys.stdin.read()


main()
