"""A loopback HTTP canary for the escape corpus (tests/integration/test_escape.sh): it answers
every request with 418 and appends the request line and headers to a log, which must stay
empty (no strategy may reach any address). It prints its port, then serves until its parent
closes stdin or 600 s pass."""
import http.server
import sys
import threading


class Canary(http.server.BaseHTTPRequestHandler):
    def handle_one_request(self):
        try:
            super().handle_one_request()
        except Exception:
            pass

    def _hit(self):
        with open(sys.argv[1], "a") as f:
            f.write(f"{self.command} {self.path}\n{self.headers}\n")
        self.send_response(418)
        self.end_headers()

    do_GET = do_POST = do_PUT = do_DELETE = _hit

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Canary)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
threading.Timer(600, lambda: sys.exit(0)).start()
sys.stdin.read()
server.shutdown()
