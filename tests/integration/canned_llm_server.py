#!/usr/bin/env python3
"""A loopback OpenAI-compatible chat server that answers every request with one canned reply
(the text of REPLY_FILE, as each of the n choices) and appends each request body it received,
as one JSON line, to LOG_FILE. The kevo run tests of imported KernelBench problems use it as
"the LLM": the reply is a correct kernel in the recipe's contract, and the log shows what kevo
asked (the prompt must carry the signature and the PyTorch specification).

usage: canned_llm_server.py REPLY_FILE[,REPLY_FILE...] LOG_FILE
       canned_llm_server.py --by-key KEY=REPLY_FILE[,KEY=REPLY_FILE...] LOG_FILE
With several files the server replays a fixed script: request k gets file k, the last one after
that (bench/profile.sh). With --by-key a request gets the file of the first KEY its body holds
(a kernel's name, for a suite of several problems: tests/gpu/test_suite_torch.sh), an error
when it holds none. Prints "PORT <n>" once listening on 127.0.0.1, then serves until killed.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    replies = [""]
    keys = []
    served = [0]
    log = None

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            req = json.loads(raw)
        except ValueError:
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        with LOCK, open(self.log, "a") as f:
            f.write(json.dumps(req) + "\n")
            if self.keys:
                text = raw.decode("utf-8", "replace")
                hits = [i for i, k in enumerate(self.keys) if k in text]
                reply = self.replies[hits[0]] if hits else None
            else:
                reply = self.replies[min(self.served[0], len(self.replies) - 1)]
            self.served[0] += 1
        if reply is None:
            self.send_json(400, {"error": {"message": "no reply for this request's key"}})
            return
        n = int(req.get("n", 1))
        choices = [{"index": i, "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop"} for i in range(n)]
        prompt_tokens = max(1, len(raw) // 4)
        out_tokens = n * max(1, len(reply) // 4)
        self.send_json(200, {"id": "chatcmpl-canned", "object": "chat.completion",
                             "model": req.get("model"), "choices": choices,
                             "usage": {"prompt_tokens": prompt_tokens,
                                       "completion_tokens": out_tokens,
                                       "total_tokens": prompt_tokens + out_tokens}})


def main():
    args = sys.argv[1:]
    by_key = args[:1] == ["--by-key"]
    if by_key:
        args = args[1:]
    if len(args) != 2:
        sys.stderr.write("usage: canned_llm_server.py [--by-key] "
                         "[KEY=]REPLY_FILE[,[KEY=]REPLY_FILE...] LOG_FILE\n")
        return 2
    Handler.replies = []
    for item in args[0].split(","):
        path = item
        if by_key:
            key, path = item.split("=", 1)
            Handler.keys.append(key)
        with open(path) as f:
            Handler.replies.append(f.read())
    Handler.log = args[1]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("PORT %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
