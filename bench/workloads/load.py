"""The load generator for bench/busy.py: CLIENTS threads each requesting /page, /api and /health
in turn from 127.0.0.1:PORT, one request at a time (a bounded load: the server is never sent more
than CLIENTS at once). Prints the count of completed requests on each line it reads from stdin,
so that the bench can read counts at the phases' edges. Usage: load.py PORT CLIENTS"""

import http.client
import sys
import threading

PATHS = ("/page", "/api", "/health")
done = [0]
lock = threading.Lock()


def client(port: int) -> None:
    i = 0
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", PATHS[i % len(PATHS)])
            connection.getresponse().read()
            connection.close()
        except OSError:
            continue
        i += 1
        with lock:
            done[0] += 1


def main() -> None:
    port, clients = int(sys.argv[1]), int(sys.argv[2])
    for _ in range(clients):
        threading.Thread(target=client, args=(port,), daemon=True).start()
    for _ in sys.stdin:
        with lock:
            print(done[0], flush=True)


main()
