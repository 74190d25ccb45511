#!/usr/bin/env python3
"""A stand-in for the OpenAI Responses API on loopback, for driving the real
Codex CLI in tests.

mock_responses.py PORT_FILE RECORD_FILE SCRIPT_FILE

Listens on 127.0.0.1 (a port the kernel picks, written to PORT_FILE), and
answers each POST .../responses with a server-sent event stream.  SCRIPT_FILE
is a JSON list: the Nth model request gets the Nth entry's output items
(each a Responses API item: a function_call, a message), and every request
past the list gets one final assistant message.  Each request's JSON body is
appended to RECORD_FILE as one line, so the test can read what Codex sent
back (the function_call_output items).  Runs until killed.
"""
import http.server
import json
import os
import sys
import threading

port_file, record_file, script_file = sys.argv[1:4]
with open(script_file, encoding="utf-8") as f:
    script = json.load(f)
lock = threading.Lock()
served = 0


def final_message(text):
    return {"type": "message", "role": "assistant", "id": "msg_final",
            "content": [{"type": "output_text", "text": text}]}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("mock_responses: " + (fmt % args) + "\n")

    def do_GET(self):
        # model listings and the like: nothing to offer
        body = b'{"object":"list","data":[],"models":[]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global served
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw)
        except ValueError:
            request = {"unparsed": raw.decode("utf-8", "replace")}
        with lock:
            n = served
            served += 1
            with open(record_file, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "body": request}) + "\n")
        if not self.path.endswith("/responses"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        items = script[n] if n < len(script) else [final_message("done")]
        events = [{"type": "response.created", "response": {"id": "resp_%d" % n}}]
        for item in items:
            events.append({"type": "response.output_item.done", "item": item})
        events.append({"type": "response.completed", "response": {
            "id": "resp_%d" % n,
            "usage": {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                      "output_tokens_details": None, "total_tokens": 2}}})
        body = "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e)) for e in events)
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
tmp = port_file + ".tmp"
with open(tmp, "w", encoding="utf-8") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(tmp, port_file)
server.serve_forever()
