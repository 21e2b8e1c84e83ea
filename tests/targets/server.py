"""Target: a thread-per-request HTTP server on loopback (http.server.ThreadingHTTPServer, a new
thread for every connection) and its client, a thread of the same process that makes requests
one after another for SECONDS (argv[1], default 1e6), one connection each.

Reports when the server listens and the client is about to start, with the TIDs of the
long-lived threads; prints `{"done": requests}` when the client has finished, then idles.
With `gated` as argv[2] the client waits for SIGUSR1 before it starts."""

import http.client
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

try:
    from http.server import ThreadingHTTPServer
except ImportError:  # before 3.7: what 3.7 made of the same two parts
    class ThreadingHTTPServer(ThreadingMixIn, HTTPServer):
        daemon_threads = True

from report import ready, thread_info

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1e6
GATED = sys.argv[2:3] == ["gated"]


def render(path):
    items = [{"id": i, "name": f"item-{i}", "price": i * 1.25} for i in range(200)]
    return json.dumps({"path": path, "items": items}).encode()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = render(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
port = server.server_address[1]
go = threading.Event()
infos = {}


def serve():
    infos["acceptor"] = thread_info()
    server.serve_forever()


def client():
    infos["client"] = thread_info()
    go.wait()
    end = time.monotonic() + SECONDS
    requests = 0
    while time.monotonic() < end:
        connection = http.client.HTTPConnection("127.0.0.1", port)
        connection.request("GET", f"/items/{requests}")
        connection.getresponse().read()
        connection.close()
        requests += 1
    ready({"done": requests})


signal.signal(signal.SIGUSR1, lambda *_: go.set())
acceptor = threading.Thread(target=serve, name="acceptor", daemon=True)
acceptor.start()
clients = threading.Thread(target=client, name="client", daemon=True)
clients.start()
while len(infos) < 2:
    time.sleep(0.001)
infos["main"] = thread_info()
ready({"threads": infos, "port": port, "version": list(sys.version_info[:3])})
if not GATED:
    go.set()
while True:
    time.sleep(1e6)
