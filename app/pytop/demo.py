"""pytop's demo workload (`pytop --demo` runs it): a small service with a few named threads.

- request handlers parse and price orders of a few hundred lines and render JSON, and now and
  then wait on a "database" (a sleep: in cpu mode it costs only its wake-ups, in wall mode it
  is where the handlers spend most of their time);
- a report thread crunches numbers in pure Python, mostly holding the GIL;
- a cache janitor sleeps most of the time;
- the main thread hands out work and checks on the others.
"""

import json
import math
import queue
import random
import threading
import time
from typing import Any

ORDERS = [{"id": i, "items": [{"sku": f"SKU-{j}", "qty": j % 5 + 1, "price": 9.99 + j} for j in range(300)]}
          for i in range(50)]


def parse_request(payload: str) -> "dict[str, Any]":
    order: dict[str, Any] = json.loads(payload)
    return order


def price_order(order: "dict[str, Any]") -> float:
    return float(sum(item["qty"] * item["price"] for item in order["items"]))


def render_response(order: "dict[str, Any]", total: float) -> str:
    return json.dumps({"order": order["id"], "total": round(total, 2), "items": order["items"]})


def query_database(seconds: float) -> None:
    time.sleep(seconds)


def handle_request(payload: str) -> str:
    order = parse_request(payload)
    if random.random() < 0.1:
        query_database(0.005)
    return render_response(order, price_order(order))


def request_handler(jobs: "queue.Queue[str]") -> None:
    while True:
        handle_request(jobs.get())


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    for d in range(2, math.isqrt(n) + 1):
        if n % d == 0:
            return False
    return True


def monthly_report() -> int:
    return sum(1 for n in range(50_000, 60_000) if is_prime(n))


def report_worker() -> None:
    while True:
        monthly_report()
        time.sleep(0.05)


def cache_janitor() -> None:
    while True:
        time.sleep(0.5)
        sum(range(1000))


def main() -> None:
    jobs: queue.Queue[str] = queue.Queue(maxsize=100)
    for i in range(3):
        threading.Thread(target=request_handler, args=(jobs,), name=f"handler-{i}", daemon=True).start()
    threading.Thread(target=report_worker, name="reports", daemon=True).start()
    threading.Thread(target=cache_janitor, name="cache-janitor", daemon=True).start()
    payloads = [json.dumps(order) for order in ORDERS]
    while True:
        for payload in payloads:
            jobs.put(payload)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
