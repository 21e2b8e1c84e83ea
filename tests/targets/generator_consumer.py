"""Target: a consumer doing arithmetic on each value a generator yields, in a loop (CPython's
sampling profiler's blocking-mode test). A true stack has fibonacci_generator only as its leaf,
under consume_generator; one with consume_generator as the leaf on an arithmetic line and
fibonacci_generator in it was torn. Reports the arithmetic lines, then works."""

import sys

from report import ready


def fibonacci_generator(n):
    a, b = 0, 1
    for _ in range(n):
        yield a
        a, b = b, a + b


def consume_generator():
    gen = fibonacci_generator(10000)
    for value in gen:
        temp1 = value + 1
        temp2 = value * 2
        temp3 = value - 1
        result = temp1 + temp2 + temp3  # noqa: F841


def main():
    while True:
        consume_generator()


first = consume_generator.__code__.co_firstlineno + 3
ready({"arithmetic_lines": list(range(first, first + 4)), "version": list(sys.version_info[:3])})
main()
