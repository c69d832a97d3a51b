#!/usr/bin/env python3
"""A loopback OpenAI-compatible chat server that answers kernel-rewrite prompts for the kevo run
tests: it takes the kernel from the last user message (the first ```cuda block) and returns n
rewrites of it, each marked `/* kevo-model: speed=F */` with F a little above the parent's, which
the synthetic cost model (examples/cost_model.lua) turns into a faster time. Every third choice
is broken (an `#error` line: a compile error). Replies depend only on the request body, so a
run replays exactly. (llm_server.py tests kevo.llm's faults; this one feeds search strategies.)

Prints "PORT <n>" once listening on 127.0.0.1, then serves until killed. GET /_count returns
the number of chat requests served.
"""
import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNT = [0]
MARK = re.compile(r"\n?/\* kevo-model: speed=([0-9.]+) \*/")


def rewrite(source, i, digest):
    m = MARK.search(source)
    speed = float(m.group(1)) if m else 1.0
    base = MARK.sub("", source).rstrip("\n")
    if (digest + i) % 3 == 2:
        return base + "\n#error this rewrite does not compile\n"
    step = 1.04 + 0.05 * ((digest >> (4 * i)) % 4)
    return base + "\n/* kevo-model: speed=%.4f */\n" % (speed * step)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_json(200, {"count": COUNT[0]})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        req = json.loads(raw)
        COUNT[0] += 1
        users = [m["content"] for m in req.get("messages", []) if m.get("role") == "user"]
        text = users[-1] if users else ""
        m = re.search(r"```(?:cuda|cpp|c)\n(.*?)```", text, re.S)
        n = int(req.get("n", 1))
        digest = int(hashlib.sha256(raw).hexdigest()[:8], 16)
        choices = []
        for i in range(n):
            if m:
                content = "Here is a faster version:\n\n```cuda\n%s```\n" % rewrite(m.group(1), i, digest)
            else:
                content = "I see no kernel to rewrite."
            choices.append({"index": i, "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop"})
        prompt_tokens = max(1, len(raw) // 4)
        out_tokens = sum(len(c["message"]["content"]) // 4 for c in choices)
        self.send_json(200, {"id": "chatcmpl-run", "object": "chat.completion",
                             "model": req.get("model"), "choices": choices,
                             "usage": {"prompt_tokens": prompt_tokens,
                                       "completion_tokens": out_tokens,
                                       "total_tokens": prompt_tokens + out_tokens}})


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("PORT %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
