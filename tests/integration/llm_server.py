#!/usr/bin/env python3
"""A loopback HTTP/1.1 server speaking the OpenAI chat-completions and Anthropic Messages APIs,
with faults scripted by the model name, for kevo's LLM tests.

It prints "PORT <n>" on stdout once listening on 127.0.0.1 (a random port), then serves until
killed. The model name is "<tag>/<scenario>": the tag is free (each distinct model string has its
own request counter, so tests do not disturb one another) and the scenario is one of:

  ok          a normal reply that echoes the last user message
  kernel      canned kernel-writing replies with code blocks (one per turn of the conversation)
  r429s       429 with Retry-After: 1 (seconds) once, then ok
  r429ms      429 with retry-after-ms: 300 once, then ok
  r429date    429 with Retry-After as an HTTP date 3 s after the response's Date, once, then ok
  e500x3      500 three times, then ok
  e529        529 (overloaded) once, then ok
  e408, e409  that status once, then ok
  e500always  500 every time
  e401 e400 e403 e404 e413 e422   that status every time
  spend       429 with a spend-limit body (insufficient_quota / billing_error) every time
  length      a reply cut by the token limit (finish_reason length / stop_reason max_tokens)
  malformed   200 with a body that is not JSON
  stall       accepts the request and sends nothing
  midbody     sends headers and part of the body, then nothing
  cut         sends headers and part of the body, then closes (once), then ok
  slow        waits 1 s, then ok
  huge        a 2 MiB reply

Every request is recorded: GET /_log returns them as JSON (time, path, headers, body, the
client's port as the connection id, the count for its model); POST /_reset clears the log.
"""
import email.utils
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
LOG = []
COUNTS = {}

KERNEL_TURNS = [
    """Here is a first version: one block per row.

```cuda
extern "C" __global__ void softmax_rows(const float* x, float* y, int M, int N) {
  int row = blockIdx.x;
  if (row >= M) return;
  float m = -1e30f;
  for (int j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, x[row * N + j]);
  // (a real kernel reduces m across the block here)
  for (int j = threadIdx.x; j < N; j += blockDim.x) y[row * N + j] = expf(x[row * N + j] - m);
}
/* kevo:launch
return {kernels = {{name = "softmax_rows", grid = {M}, block = {256},
                    args = {"x", "y", i32(M), i32(N)}}}}
*/
```
""",
    """The mismatch comes from the missing block reduction. Fixed, with the launch apart:

```cuda
extern "C" __global__ void softmax_rows(const float* x, float* y, int M, int N) {
  __shared__ float red[32];
  int row = blockIdx.x;
  (void)red;
  for (int j = threadIdx.x; j < N; j += blockDim.x) y[row * N + j] = x[row * N + j];
}
```

```lua
return {kernels = {{name = "softmax_rows", grid = {M}, block = {BLOCK},
                    args = {"x", "y", i32(M), i32(N)}}}}
```
""",
    """Two variants to compare:

```cuda
extern "C" __global__ void softmax_v1(const float* x, float* y, int M, int N) {}
/* kevo:launch
return {kernels = {{name = "softmax_v1", grid = {M}, block = {128}, args = {"x", "y", i32(M), i32(N)}}}}
*/
```

```cuda
extern "C" __global__ void softmax_v2(const float* x, float* y, int M, int N) {}
/* kevo:launch
return {kernels = {{name = "softmax_v2", grid = {M}, block = {512}, args = {"x", "y", i32(M), i32(N)}}}}
*/
```
""",
]

ONCE = {"r429s": 1, "r429ms": 1, "r429date": 1, "e500x3": 3, "e529": 1, "e408": 1, "e409": 1, "cut": 1}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet
        pass

    def do_GET(self):
        if self.path == "/_log":
            with LOCK:
                self.send_json(200, LOG)
        else:
            self.send_json(404, {"error": {"message": "no such path", "type": "not_found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        if self.path == "/_reset":
            with LOCK:
                LOG.clear()
                COUNTS.clear()
            return self.send_json(200, {"ok": True})
        anthropic = self.path.endswith("/messages")
        if not anthropic and not self.path.endswith("/chat/completions"):
            return self.send_json(404, {"error": {"message": "unknown endpoint " + self.path}})
        try:
            req = json.loads(raw)
        except ValueError:
            return self.send_json(400, {"error": {"message": "request is not JSON"}})
        model = str(req.get("model", ""))
        scenario = model.rsplit("/", 1)[-1]
        with LOCK:
            COUNTS[model] = COUNTS.get(model, 0) + 1
            count = COUNTS[model]
            LOG.append({"t": time.monotonic(), "path": self.path, "model": model, "count": count,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": raw, "conn": self.client_address[1]})
        self.respond(anthropic, req, scenario, count)

    # -- replies -------------------------------------------------------------------------
    def send_json(self, status, obj, extra=None):
        self.send_body(status, json.dumps(obj).encode(), extra)

    def send_body(self, status, body, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def error(self, anthropic, status, kind, message, extra=None):
        if anthropic:
            body = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            body = {"error": {"message": message, "type": kind, "code": kind}}
        self.send_json(status, body, extra)

    def reply(self, anthropic, req, texts, finish):
        prompt_tokens = max(1, len(json.dumps(req.get("messages", []))) // 4)
        out_tokens = sum(max(1, len(t) // 4) for t in texts)
        if anthropic:
            body = {"id": "msg_1", "type": "message", "role": "assistant", "model": req["model"],
                    "content": [{"type": "text", "text": texts[0]}],
                    "stop_reason": "max_tokens" if finish == "length" else "end_turn",
                    "usage": {"input_tokens": prompt_tokens, "output_tokens": out_tokens}}
        else:
            body = {"id": "chatcmpl-1", "object": "chat.completion", "model": req["model"],
                    "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                                 "finish_reason": finish} for i, t in enumerate(texts)],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": out_tokens,
                              "total_tokens": prompt_tokens + out_tokens}}
        self.send_json(200, body, {"x-ratelimit-remaining-requests": "99"})

    def ok(self, anthropic, req, scenario):
        msgs = req.get("messages", [])
        users = [m for m in msgs if m.get("role") == "user"]
        n = 1 if anthropic else int(req.get("n", 1))
        if scenario == "kernel":
            text = KERNEL_TURNS[min(len(users), len(KERNEL_TURNS)) - 1]
        else:
            last = users[-1]["content"] if users else ""
            if isinstance(last, list):
                last = " ".join(b.get("text", "") for b in last)
            text = "echo: " + str(last)[:60]
        self.reply(anthropic, req, [text + ("" if n == 1 else " #%d" % i) for i in range(n)],
                   "stop")

    def respond(self, anthropic, req, scenario, count):
        if scenario in ONCE and count <= ONCE[scenario]:
            if scenario == "r429s":
                return self.error(anthropic, 429, "rate_limit_error", "slow down",
                                  {"Retry-After": "1"})
            if scenario == "r429date":  # send_response adds Date: this second (or the next)
                at = email.utils.formatdate(int(time.time()) + 3, usegmt=True)
                return self.error(anthropic, 429, "rate_limit_error", "slow down",
                                  {"Retry-After": at})
            if scenario == "r429ms":
                return self.error(anthropic, 429, "rate_limit_error", "slow down",
                                  {"retry-after-ms": "300", "Retry-After": "30"})
            if scenario == "e500x3":
                return self.error(anthropic, 500, "server_error", "internal error")
            if scenario == "e529":
                return self.error(anthropic, 529, "overloaded_error", "overloaded")
            if scenario in ("e408", "e409"):
                return self.error(anthropic, int(scenario[1:]), "retry", "try again")
            if scenario == "cut":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b'{"choices": [')
                self.wfile.flush()
                self.close_connection = True
                return
        if scenario == "e500always":
            return self.error(anthropic, 500, "server_error", "internal error")
        if scenario.startswith("e4") and scenario[1:].isdigit():
            return self.error(anthropic, int(scenario[1:]), "invalid_request_error", "no")
        if scenario == "spend":
            if anthropic:
                return self.error(anthropic, 429, "billing_error",
                                  "Your credit balance is too low")
            return self.error(anthropic, 429, "insufficient_quota",
                              "You exceeded your current quota, check your billing details")
        if scenario == "length":
            return self.reply(anthropic, req, ["```cuda\n__global__ void k() {\n  int i ="],
                              "length")
        if scenario == "malformed":
            return self.send_body(200, b'{"choices": [{"message": <html>oops')
        if scenario == "stall":
            time.sleep(30)
            return
        if scenario == "midbody":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"choices": [')
            self.wfile.flush()
            time.sleep(30)
            return
        if scenario == "slow":
            time.sleep(1.0)
        if scenario == "huge":
            return self.reply(anthropic, req, ["x" * (2 << 20)], "stop")
        self.ok(anthropic, req, scenario)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # clients hanging up are expected


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    print("PORT %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
