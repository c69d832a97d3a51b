#!/usr/bin/env python3
"""run_llm_server.py (the loopback rewriter) with a request log and a hold, for test_resume.sh.

Every chat request is logged to LOG (argv[1]) as "recv <sha>" when it arrives and "sent <sha>"
once its reply is written (sha: sha256 of the body, 16 hex digits). While the file CTL (argv[2])
holds "hold <sha>", a request with that sha is logged as "held <sha>" and answered only after
60 s (the test kills kevo meanwhile; "hold *" holds every request); "holdone <sha>" holds
only the first request with that
sha (the samples of an n>1 batch have one body: one is held, its siblings are answered);
"oddmalformed <sha>" answers the 1st, 3rd, 5th... request with that sha with a 200 whose body
is not JSON. CTL may hold several such lines. Prints "PORT <n>" once listening on 127.0.0.1.
"""
import hashlib
import os
import sys
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_llm_server  # noqa: E402

LOCK = threading.Lock()
HELD = set()
ARRIVALS = {}


def log(line):
    with LOCK, open(sys.argv[1], "a") as f:
        f.write(line + "\n")


class Handler(run_llm_server.Handler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        sha = hashlib.sha256(raw).hexdigest()[:16]
        log("recv " + sha)
        try:
            with open(sys.argv[2]) as f:
                ctl = {tuple(line.split()[:2]) for line in f if line.strip()}
        except OSError:
            ctl = set()
        with LOCK:
            ARRIVALS[sha] = ARRIVALS.get(sha, 0) + 1
            nth = ARRIVALS[sha]
            hold = ("hold", sha) in ctl or ("hold", "*") in ctl or \
                (("holdone", sha) in ctl and sha not in HELD)
            if ("holdone", sha) in ctl:
                HELD.add(sha)
        if hold:
            log("held " + sha)
            time.sleep(60)
        if ("oddmalformed", sha) in ctl and nth % 2 == 1:
            body = b"<html>not JSON</html>"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            log("sent " + sha)
            return
        # hand the body on to the rewriter as if it had just been read
        import io
        self.rfile = io.BytesIO(raw)
        super().do_POST()
        log("sent " + sha)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("PORT %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
