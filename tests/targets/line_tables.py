"""Target helper (not a long-running target): prints, for code objects of a few stdlib modules,
their raw line table and the line CPython itself gives every instruction offset."""

import dis
import json
import sys
import types

FORMAT = 1 if sys.version_info < (3, 10) else 2 if sys.version_info < (3, 11) else 3


def code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def expected_lines(code):
    size = len(code.co_code)
    if FORMAT == 1:  # before 3.10: the line of the last line start at or before the offset
        starts = list(dis.findlinestarts(code))
        lines = []
        for offset in range(0, size, 2):
            line = code.co_firstlineno
            for start, start_line in starts:
                if start <= offset:
                    line = start_line
            lines.append(line)
        return lines
    lines = [-1] * (size // 2)
    for start, end, line in code.co_lines():
        for offset in range(start, min(end, size), 2):
            lines[offset // 2] = -1 if line is None else line
    return lines


def table_of(code):
    return code.co_lnotab if FORMAT == 1 else code.co_linetable


out = []
for name in ("threading", "json.decoder", "argparse", "dis"):
    module = __import__(name, fromlist=["_"])
    with open(module.__file__) as f:
        top = compile(f.read(), module.__file__, "exec")
    for code in code_objects(top):
        out.append({
            "format": FORMAT,
            "table": table_of(code).hex(),
            "firstlineno": code.co_firstlineno,
            "expected": expected_lines(code),
        })
print(json.dumps(out))
