"""Benchmark workload `flask_app`: a small Flask app under Werkzeug's threaded development server
(a thread per request), as many internal tools run: a page rendered from a Jinja template, a
JSON API doing a little computing, a static-ish health check. Flask comes from the folder in
PYTHONPATH that bench/busy.py fills. argv[1]: the port. Prints "ready" once it listens."""

import json
import logging
import sys
import threading
import time

from flask import Flask, jsonify, render_template_string
from werkzeug.serving import make_server

PAGE = """<html><body><h1>{{ title }}</h1><table>
{% for row in rows %}<tr><td>{{ row.id }}</td><td>{{ row.name | upper }}</td>
<td>{{ "%.2f" | format(row.price) }}</td></tr>{% endfor %}</table></body></html>"""

app = Flask(__name__)
CATALOGUE = [{"id": i, "name": f"item {i}", "price": i * 1.25} for i in range(300)]


@app.route("/page")
def page() -> str:
    return render_template_string(PAGE, title="Catalogue", rows=CATALOGUE[:80])


@app.route("/api")
def api() -> object:
    totals = {}
    for item in CATALOGUE:
        totals[item["id"] % 10] = totals.get(item["id"] % 10, 0.0) + item["price"]
    payload = json.loads(json.dumps({"totals": totals, "count": len(CATALOGUE)}))
    return jsonify(payload)


@app.route("/health")
def health() -> str:
    return "ok"


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = make_server("127.0.0.1", int(sys.argv[1]), app, threaded=True)
    threading.Thread(target=server.serve_forever, name="server", daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


main()
