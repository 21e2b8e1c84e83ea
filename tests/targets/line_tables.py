"""Target helper (not a long-running target): prints, for code objects of a few stdlib modules,
their raw line table and the line CPython itself gives every instruction offset (every even
offset; every offset on 2.7, whose instructions are 1 or 3 bytes). Runs under 2.7 too."""

import binascii
import dis
import json
import sys
import types

if sys.version_info < (3,):
    FORMAT, STEP = 4, 1  # 2.7's co_lnotab: unsigned line increments
else:
    FORMAT, STEP = 1 if sys.version_info < (3, 10) else 2 if sys.version_info < (3, 11) else 3, 2


def code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for inner in code_objects(const):
                yield inner


def expected_lines(code):
    size = len(code.co_code)
    if FORMAT in (1, 4):  # before 3.10: the line of the last line start at or before the offset
        starts = list(dis.findlinestarts(code))
        lines = []
        for offset in range(0, size, STEP):
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
    return code.co_lnotab if FORMAT in (1, 4) else code.co_linetable


def source_of(module):
    path = module.__file__
    return path[:-1] if path.endswith(".pyc") else path  # 2.7 names the compiled file


out = []
for name in ("threading", "json.decoder", "argparse", "dis"):
    module = __import__(name, fromlist=["_"])
    with open(source_of(module)) as f:
        top = compile(f.read(), source_of(module), "exec")
    for code in code_objects(top):
        out.append({
            "format": FORMAT,
            "table": binascii.hexlify(table_of(code)).decode(),
            "step": STEP,
            "firstlineno": code.co_firstlineno,
            "expected": expected_lines(code),
        })
print(json.dumps(out))
