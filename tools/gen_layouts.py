#!/usr/bin/env python3
"""Generate app/pytop/process/layouts/generated.py: CPython struct offsets for every supported version.

How: for each minor version, a small C program is compiled against that version's own headers
(internal ones included, with Py_BUILD_CORE) and prints offsetof()/sizeof() of every field the
unwinder reads. The headers come from the interpreters tools/provision_interpreters.py finds or
fetches (pyenv's include/ for 2.7 and 3.6-3.13, the libpythonX.Y-dev package from Debian sid for 3.14 and
3.15). For 3.13+ it also records where each field sits inside `_Py_DebugOffsets`, so that pytop can
take the offsets a target publishes about itself at run time and only falls back to this table
for what the target does not publish.

Run it after adding a version or when a header changes:
    python tools/gen_layouts.py            # rewrites app/pytop/process/layouts/generated.py
    python tools/gen_layouts.py --check    # exit 1 if the committed file is out of date
"""

from __future__ import annotations

import argparse
import json
import pprint
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE.parent / "app" / "pytop" / "process" / "layouts" / "generated.py"
sys.path.insert(0, str(HERE))
import provision_interpreters  # noqa: E402

V = tuple[int, int]
ALL = ((2, 7), (3, 99))
# Python 3 only: PEP 393 str, the split-table dict, heap types' cached keys. 2.7 has PyStringObject,
# the open-addressing dict of PyDictEntry (ma_table, ma_mask) and PyIntObject beside PyLongObject.
PY3 = ((3, 6), (3, 99))
PY2 = ((2, 7), (2, 7))
# 3.7 brought _PyRuntime (2.7's and 3.6's interpreter list, GIL and GC flag are static variables: pytop
# finds them by symbol and gives their places as offsets from the lowest of them; see locate.py).
RUNTIME = ((3, 7), (3, 99))


def since(v: V) -> tuple[V, V]:
    return (v, (3, 99))


def until(v: V) -> tuple[V, V]:
    return ((2, 7), v)


# (layout field, C expression, (first, last) minor version it applies to). The first matching
# row wins. Missing fields become -1 in the generated table.
FIELDS: list[tuple[str, str, tuple[V, V]]] = [
    # _PyRuntimeState
    ("rt_interpreters_head", "offsetof(_PyRuntimeState, interpreters.head)", RUNTIME),
    ("rt_main_thread", "offsetof(_PyRuntimeState, main_thread)", since((3, 8))),
    ("rt_gil_locked", "offsetof(_PyRuntimeState, ceval.gil.locked)", ((3, 7), (3, 11))),
    ("rt_gil_holder", "offsetof(_PyRuntimeState, ceval.gil.last_holder)", ((3, 7), (3, 11))),
    ("rt_gil_switches", "offsetof(_PyRuntimeState, ceval.gil.switch_number)", ((3, 7), (3, 11))),
    ("rt_gc_collecting", "offsetof(_PyRuntimeState, gc.collecting)", ((3, 7), (3, 8))),
    ("rt_size", "sizeof(_PyRuntimeState)", RUNTIME),
    # PyInterpreterState
    ("is_next", "offsetof(PyInterpreterState, next)", ALL),
    ("is_id", "offsetof(PyInterpreterState, id)", since((3, 7))),
    ("is_threads_head", "offsetof(PyInterpreterState, tstate_head)", until((3, 10))),
    ("is_threads_head", "offsetof(PyInterpreterState, threads.head)", since((3, 11))),
    ("is_gil_locked", "offsetof(PyInterpreterState, _gil.locked)", since((3, 12))),
    ("is_gil_holder", "offsetof(PyInterpreterState, _gil.last_holder)", since((3, 12))),
    ("is_gil_switches", "offsetof(PyInterpreterState, _gil.switch_number)", since((3, 12))),
    ("is_gc_collecting", "offsetof(PyInterpreterState, gc.collecting)", since((3, 9))),
    ("is_code_generation", "offsetof(PyInterpreterState, _code_object_generation)", since((3, 14))),
    ("is_size", "sizeof(PyInterpreterState)", ALL),
    # PyThreadState
    ("ts_next", "offsetof(PyThreadState, next)", ALL),
    ("ts_interp", "offsetof(PyThreadState, interp)", ALL),
    ("ts_thread_id", "offsetof(PyThreadState, thread_id)", ALL),
    ("ts_native_thread_id", "offsetof(PyThreadState, native_thread_id)", since((3, 11))),
    ("ts_unique_id", "offsetof(PyThreadState, id)", ((3, 7), (3, 10))),
    ("ts_frame", "offsetof(PyThreadState, frame)", until((3, 10))),
    ("ts_frame", "offsetof(PyThreadState, current_frame)", since((3, 13))),
    ("ts_cframe", "offsetof(PyThreadState, cframe)", ((3, 11), (3, 12))),
    ("cf_current_frame", "offsetof(_PyCFrame, current_frame)", ((3, 11), (3, 12))),
    ("ts_datastack_chunk", "offsetof(PyThreadState, datastack_chunk)", since((3, 11))),
    ("ts_datastack_top", "offsetof(PyThreadState, datastack_top)", since((3, 11))),
    ("ts_size", "sizeof(PyThreadState)", ALL),
    # Frames: PyFrameObject chain up to 3.10, _PyInterpreterFrame from 3.11.
    ("fr_previous", "offsetof(PyFrameObject, f_back)", until((3, 10))),
    ("fr_previous", "offsetof(_PyInterpreterFrame, previous)", since((3, 11))),
    ("fr_code", "offsetof(PyFrameObject, f_code)", until((3, 10))),
    ("fr_code", "offsetof(_PyInterpreterFrame, f_code)", ((3, 11), (3, 12))),
    ("fr_code", "offsetof(_PyInterpreterFrame, f_executable)", since((3, 13))),
    ("fr_lasti", "offsetof(PyFrameObject, f_lasti)", until((3, 10))),
    ("fr_instr_ptr", "offsetof(_PyInterpreterFrame, prev_instr)", ((3, 11), (3, 12))),
    ("fr_instr_ptr", "offsetof(_PyInterpreterFrame, instr_ptr)", since((3, 13))),
    ("fr_owner", "offsetof(_PyInterpreterFrame, owner)", since((3, 11))),
    ("fr_header_size", "offsetof(PyFrameObject, f_localsplus)", until((3, 10))),
    ("fr_header_size", "offsetof(_PyInterpreterFrame, localsplus)", since((3, 11))),
    # The first owner value that marks a frame that is not Python code (C-stack shims, and
    # from 3.14 interpreter-owned entry frames); such frames are skipped.
    ("fr_is_entry", "offsetof(_PyInterpreterFrame, is_entry)", ((3, 11), (3, 11))),
    ("fr_owner_native", "FRAME_OWNED_BY_CSTACK", ((3, 12), (3, 13))),
    ("fr_owner_native", "FRAME_OWNED_BY_INTERPRETER", since((3, 14))),
    ("fr_executable_tag_bits", "Py_TAG_BITS", since((3, 14))),
    # The largest valid owner value: a frame read from torn memory rarely has one in range.
    ("fr_owner_max", "FRAME_OWNED_BY_FRAME_OBJECT", ((3, 11), (3, 11))),
    ("fr_owner_max", "FRAME_OWNED_BY_CSTACK", ((3, 12), (3, 14))),
    ("fr_owner_max", "FRAME_OWNED_BY_INTERPRETER", since((3, 15))),
    ("chunk_previous", "offsetof(_PyStackChunk, previous)", since((3, 11))),
    ("chunk_size", "offsetof(_PyStackChunk, size)", since((3, 11))),
    ("chunk_data", "offsetof(_PyStackChunk, data)", since((3, 11))),
    # PyCodeObject
    ("co_filename", "offsetof(PyCodeObject, co_filename)", ALL),
    ("co_name", "offsetof(PyCodeObject, co_name)", ALL),
    ("co_qualname", "offsetof(PyCodeObject, co_qualname)", since((3, 11))),
    ("co_linetable", "offsetof(PyCodeObject, co_lnotab)", until((3, 9))),
    ("co_linetable", "offsetof(PyCodeObject, co_linetable)", since((3, 10))),
    ("co_firstlineno", "offsetof(PyCodeObject, co_firstlineno)", ALL),
    ("co_flags", "offsetof(PyCodeObject, co_flags)", ALL),
    # Code that runs only when something resumes it: never a thread's first frame.
    ("co_flags_resumable", "CO_GENERATOR", PY2),
    ("co_flags_resumable", "CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR", PY3),
    ("co_code", "offsetof(PyCodeObject, co_code)", until((3, 10))),
    ("co_code_adaptive", "offsetof(PyCodeObject, co_code_adaptive)", since((3, 11))),
    ("co_header_size", "sizeof(PyCodeObject)", until((3, 10))),
    ("co_header_size", "offsetof(PyCodeObject, co_code_adaptive)", since((3, 11))),
    # Plain objects
    ("is_modules", "offsetof(PyInterpreterState, modules)", until((3, 11))),
    ("is_modules", "offsetof(PyInterpreterState, imports.modules)", since((3, 12))),
    ("ob_refcnt", "offsetof(PyObject, ob_refcnt)", ALL),
    ("ob_type", "offsetof(PyObject, ob_type)", ALL),
    ("tp_basicsize", "offsetof(PyTypeObject, tp_basicsize)", ALL),
    ("tp_itemsize", "offsetof(PyTypeObject, tp_itemsize)", ALL),
    ("tp_flags", "offsetof(PyTypeObject, tp_flags)", ALL),
    ("tp_dictoffset", "offsetof(PyTypeObject, tp_dictoffset)", ALL),
    ("ht_cached_keys", "offsetof(PyHeapTypeObject, ht_cached_keys)", PY3),
    ("var_ob_size", "offsetof(PyVarObject, ob_size)", ALL),
    ("tp_name", "offsetof(PyTypeObject, tp_name)", ALL),
    ("bytes_sval", "offsetof(PyBytesObject, ob_sval)", ALL),
    ("str_length", "offsetof(PyASCIIObject, length)", PY3),
    ("str_state", "offsetof(PyASCIIObject, state)", PY3),
    ("str_ascii_size", "sizeof(PyASCIIObject)", PY3),
    ("str_compact_size", "sizeof(PyCompactUnicodeObject)", PY3),
    ("str_legacy_data", "offsetof(PyUnicodeObject, data)", PY3),
    # What the thread-name reader walks: sys.modules -> the threading module's dict -> its
    # _active and _limbo dicts -> a Thread instance's `_name` (and `_ident`) attribute.
    ("md_dict", "offsetof(pytop_module_38, md_dict)", until((3, 9))),
    ("md_dict", "offsetof(PyModuleObject, md_dict)", since((3, 10))),
    ("dict_ma_keys", "offsetof(PyDictObject, ma_keys)", PY3),
    ("dict_ma_values", "offsetof(PyDictObject, ma_values)", PY3),
    ("dict_ma_mask", "offsetof(PyDictObject, ma_mask)", PY2),
    ("dict_ma_table", "offsetof(PyDictObject, ma_table)", PY2),
    ("dk_size", "offsetof(pytop_dictkeys_38, dk_size)", ((3, 6), (3, 10))),
    ("dk_log2_size", "offsetof(PyDictKeysObject, dk_log2_size)", since((3, 11))),
    ("dk_log2_index_bytes", "offsetof(PyDictKeysObject, dk_log2_index_bytes)", since((3, 11))),
    ("dk_kind", "offsetof(PyDictKeysObject, dk_kind)", since((3, 11))),
    ("dk_nentries", "offsetof(pytop_dictkeys_38, dk_nentries)", ((3, 6), (3, 10))),
    ("dk_nentries", "offsetof(PyDictKeysObject, dk_nentries)", since((3, 11))),
    ("dk_indices", "offsetof(pytop_dictkeys_38, dk_indices)", ((3, 6), (3, 10))),
    ("dk_indices", "offsetof(PyDictKeysObject, dk_indices)", since((3, 11))),
    ("dict_entry_size", "sizeof(PyDictEntry)", PY2),
    ("dict_entry_size", "sizeof(pytop_dictkeyentry_38)", ((3, 6), (3, 10))),
    ("dict_entry_size", "sizeof(PyDictKeyEntry)", since((3, 11))),
    ("dict_entry_hash", "offsetof(PyDictEntry, me_hash)", PY2),
    ("dict_entry_hash", "offsetof(pytop_dictkeyentry_38, me_hash)", ((3, 6), (3, 10))),
    ("dict_entry_hash", "offsetof(PyDictKeyEntry, me_hash)", since((3, 11))),
    ("dict_entry_key", "offsetof(PyDictEntry, me_key)", PY2),
    ("dict_entry_key", "offsetof(pytop_dictkeyentry_38, me_key)", ((3, 6), (3, 10))),
    ("dict_entry_key", "offsetof(PyDictKeyEntry, me_key)", since((3, 11))),
    ("dict_entry_value", "offsetof(PyDictEntry, me_value)", PY2),
    ("dict_entry_value", "offsetof(pytop_dictkeyentry_38, me_value)", ((3, 6), (3, 10))),
    ("dict_entry_value", "offsetof(PyDictKeyEntry, me_value)", since((3, 11))),
    ("dict_unicode_entry_size", "sizeof(PyDictUnicodeEntry)", since((3, 11))),
    ("dict_unicode_entry_key", "offsetof(PyDictUnicodeEntry, me_key)", since((3, 11))),
    ("dict_unicode_entry_value", "offsetof(PyDictUnicodeEntry, me_value)", since((3, 11))),
    ("dict_values_values", "offsetof(PyDictValues, values)", since((3, 11))),
    ("dict_values_capacity", "offsetof(PyDictValues, capacity)", since((3, 13))),
    ("dict_values_valid", "offsetof(PyDictValues, valid)", since((3, 13))),
    ("long_digits", "offsetof(PyLongObject, ob_digit)", until((3, 11))),
    ("long_digits", "offsetof(PyLongObject, long_value.ob_digit)", since((3, 12))),
    ("long_tag", "offsetof(PyLongObject, long_value.lv_tag)", since((3, 12))),
    ("long_shift", "PyLong_SHIFT", ALL),
    ("int_ival", "offsetof(PyIntObject, ob_ival)", PY2),
    # Where a managed dict (and, in 3.11, a values array) sits before the object: 3.11's
    # _PyObject_ManagedDictPointer / _PyObject_ValuesPointer, 3.12's _PyObject_DictOrValuesPointer
    # (one tagged word), 3.13+'s MANAGED_DICT_OFFSET. The 3.12 header has no constant for it.
    ("managed_dict", "MANAGED_DICT_OFFSET", ((3, 11), (3, 11))),
    ("managed_dict", "-3 * (long)sizeof(PyObject *)", ((3, 12), (3, 12))),
    ("managed_dict", "MANAGED_DICT_OFFSET", since((3, 13))),
    ("managed_values", "-4 * (long)sizeof(PyObject *)", ((3, 11), (3, 11))),
    ("tpflags_managed_dict", "Py_TPFLAGS_MANAGED_DICT", since((3, 11))),
    ("tpflags_inline_values", "Py_TPFLAGS_INLINE_VALUES", since((3, 13))),
    # asyncio (3.14+): each thread's running loop and task, and the lists of its tasks (a thread's
    # own, and the interpreter's for tasks of threads that ended); a coroutine's embedded frame,
    # its state and, while it awaits, the awaited object on its value stack; sets (awaited_by).
    ("ts_asyncio_running_loop", "offsetof(_PyThreadStateImpl, asyncio_running_loop)", since((3, 14))),
    ("ts_asyncio_running_task", "offsetof(_PyThreadStateImpl, asyncio_running_task)", since((3, 14))),
    ("ts_asyncio_tasks_head", "offsetof(_PyThreadStateImpl, asyncio_tasks_head)", since((3, 14))),
    ("is_asyncio_tasks_head", "offsetof(PyInterpreterState, asyncio_tasks_head)", since((3, 14))),
    ("gen_iframe", "offsetof(PyGenObject, gi_iframe)", since((3, 14))),
    ("gen_frame_state", "offsetof(PyGenObject, gi_frame_state)", since((3, 14))),
    ("gen_state_suspended_yield_from", "FRAME_SUSPENDED_YIELD_FROM", since((3, 14))),
    ("gen_state_cleared", "FRAME_CLEARED", since((3, 14))),
    ("fr_stackpointer", "offsetof(_PyInterpreterFrame, stackpointer)", since((3, 14))),
    ("set_used", "offsetof(PySetObject, used)", ALL),
    ("set_mask", "offsetof(PySetObject, mask)", ALL),
    ("set_table", "offsetof(PySetObject, table)", ALL),
    ("set_entry_size", "sizeof(setentry)", ALL),
    ("set_entry_hash", "offsetof(setentry, hash)", ALL),
    ("set_entry_key", "offsetof(setentry, key)", ALL),
    # A frame's arguments and locals (--locals): their names and kinds on the code object, their
    # values after the frame's header (fr_header_size); the plain objects their values are.
    ("co_argcount", "offsetof(PyCodeObject, co_argcount)", ALL),
    ("co_kwonlyargcount", "offsetof(PyCodeObject, co_kwonlyargcount)", PY3),
    ("co_nlocals", "offsetof(PyCodeObject, co_nlocals)", until((3, 10))),
    ("co_varnames", "offsetof(PyCodeObject, co_varnames)", until((3, 10))),
    ("co_cellvars", "offsetof(PyCodeObject, co_cellvars)", until((3, 10))),
    ("co_freevars", "offsetof(PyCodeObject, co_freevars)", until((3, 10))),
    ("co_nlocalsplus", "offsetof(PyCodeObject, co_nlocalsplus)", since((3, 11))),
    ("co_localsplusnames", "offsetof(PyCodeObject, co_localsplusnames)", since((3, 11))),
    ("co_localspluskinds", "offsetof(PyCodeObject, co_localspluskinds)", since((3, 11))),
    ("co_flag_optimized", "CO_OPTIMIZED", ALL),
    ("co_flag_varargs", "CO_VARARGS", ALL),
    ("co_flag_varkeywords", "CO_VARKEYWORDS", ALL),
    ("fast_kind_cell", "CO_FAST_CELL", since((3, 11))),
    ("fast_kind_free", "CO_FAST_FREE", since((3, 11))),
    ("fast_kind_hidden", "CO_FAST_HIDDEN", since((3, 12))),
    ("cell_ref", "offsetof(PyCellObject, ob_ref)", ALL),
    ("tuple_items", "offsetof(PyTupleObject, ob_item)", ALL),
    ("list_items", "offsetof(PyListObject, ob_item)", ALL),
    ("float_value", "offsetof(PyFloatObject, ob_fval)", ALL),
    ("dict_ma_used", "offsetof(PyDictObject, ma_used)", ALL),
    ("tpflags_long_subclass", "Py_TPFLAGS_LONG_SUBCLASS", ALL),
    ("tpflags_unicode_subclass", "Py_TPFLAGS_UNICODE_SUBCLASS", ALL),
]

# Bit fields of PyASCIIObject.state, found by setting each one and looking at the word.
STATE_BITS = ("kind", "compact", "ascii")

# Layout field -> member of _Py_DebugOffsets (3.13+). `is_gc_collecting` is the sum of two
# entries (is_gc + gc_collecting) and is computed by pytop itself.
DEBUG_FIELDS: dict[str, str] = {
    "version": "version",
    "free_threaded": "free_threaded",
    "rt_interpreters_head": "runtime_state.interpreters_head",
    "is_size": "interpreter_state.size",
    "is_next": "interpreter_state.next",
    "is_id": "interpreter_state.id",
    "is_threads_head": "interpreter_state.threads_head",
    "is_gil_locked": "interpreter_state.gil_runtime_state_locked",
    "is_gil_holder": "interpreter_state.gil_runtime_state_holder",
    "is_gc": "interpreter_state.gc",
    "is_code_generation": "interpreter_state.code_object_generation",
    "is_modules": "interpreter_state.imports_modules",
    "ts_size": "thread_state.size",
    "ts_next": "thread_state.next",
    "ts_interp": "thread_state.interp",
    "ts_thread_id": "thread_state.thread_id",
    "ts_native_thread_id": "thread_state.native_thread_id",
    "ts_frame": "thread_state.current_frame",
    "ts_datastack_chunk": "thread_state.datastack_chunk",
    "fr_previous": "interpreter_frame.previous",
    "fr_code": "interpreter_frame.executable",
    "fr_instr_ptr": "interpreter_frame.instr_ptr",
    "fr_owner": "interpreter_frame.owner",
    "fr_header_size": "interpreter_frame.localsplus",
    "co_filename": "code_object.filename",
    "co_name": "code_object.name",
    "co_qualname": "code_object.qualname",
    "co_linetable": "code_object.linetable",
    "co_firstlineno": "code_object.firstlineno",
    "co_code_adaptive": "code_object.co_code_adaptive",
    "ob_type": "pyobject.ob_type",
    "tp_name": "type_object.tp_name",
    "bytes_sval": "bytes_object.ob_sval",
    "str_state": "unicode_object.state",
    "str_length": "unicode_object.length",
    "str_ascii_size": "unicode_object.asciiobject_size",
    "str_compact_size": "unicode_object.compactunicodeobject_size",
    "gc_collecting": "gc.collecting",
    "dict_ma_keys": "dict_object.ma_keys",
    "dict_ma_values": "dict_object.ma_values",
    "long_tag": "long_object.lv_tag",
    "long_digits": "long_object.ob_digit",
}

# Members that later versions added to _Py_DebugOffsets.
DEBUG_FIELDS_SINCE: dict[str, V] = {"is_code_generation": (3, 14), "str_compact_size": (3, 15),
                                    "dict_ma_keys": (3, 14), "dict_ma_values": (3, 14),
                                    "long_tag": (3, 14), "long_digits": (3, 14)}

PROLOGUE = r"""
#define Py_BUILD_CORE 1
#include "Python.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX < 0x030B0000
#  include "frameobject.h"
#endif
#if PY_VERSION_HEX < 0x03070000
   /* 2.7, 3.6: no runtime state; PyInterpreterState is in the public pystate.h */
#elif PY_VERSION_HEX < 0x03080000
#  include "internal/pystate.h"
#elif PY_VERSION_HEX < 0x03090000
#  include "internal/pycore_pystate.h"
#else
#  include "internal/pycore_runtime.h"
#  include "internal/pycore_interp.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#  include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030E0000
#  include "internal/pycore_interpframe.h"
#  include "internal/pycore_stackref.h"
#  include "internal/pycore_debug_offsets.h"
#  include "internal/pycore_tstate.h"
#  include "internal/pycore_genobject.h"
#endif
#if PY_MAJOR_VERSION < 3
typedef Py_ssize_t Py_hash_t; /* 2.7: hashes are longs (the 3.x typedefs below are not used) */
#endif
#if PY_VERSION_HEX < 0x030B0000
#  include "longintrepr.h"
/* Not in the installed headers before 3.11: Objects/dict-common.h of 3.8-3.10, as it is there. */
typedef struct { Py_hash_t me_hash; PyObject *me_key; PyObject *me_value; } pytop_dictkeyentry_38;
typedef struct {
    Py_ssize_t dk_refcnt; Py_ssize_t dk_size; void *dk_lookup; Py_ssize_t dk_usable; Py_ssize_t dk_nentries;
    char dk_indices[];
} pytop_dictkeys_38;
#else
#  include "internal/pycore_dict.h"
#  include "internal/pycore_object.h"
#endif
#if PY_VERSION_HEX < 0x030A0000
/* Not in the installed headers before 3.10: Objects/moduleobject.c of 3.8-3.9 (its first member). */
typedef struct { PyObject_HEAD PyObject *md_dict; } pytop_module_38;
#else
#  include "internal/pycore_moduleobject.h"
#endif

static int bit_shift(unsigned int mask) { int s = 0; while (mask && !(mask & 1)) { mask >>= 1; s++; } return s; }
#if PY_MAJOR_VERSION >= 3
static unsigned int state_word(PyASCIIObject *o) { unsigned int w = 0; memcpy(&w, &o->state, sizeof w); return w; }
#endif

int main(void) {
    int first = 1;
    printf("{");
#define EMIT(name, value) do { printf("%s\"%s\": %ld", first ? "" : ", ", name, (long)(value)); first = 0; } while (0)
"""


def applies(span: tuple[V, V], version: V) -> bool:
    return span[0] <= version <= span[1]


def program(version: V) -> str:
    lines = [PROLOGUE]
    chosen = set()
    for name, expr, span in FIELDS:
        if name not in chosen and applies(span, version):
            chosen.add(name)
            lines.append(f'    EMIT("{name}", {expr});')
    for bit in STATE_BITS:
        if version < (3, 0):  # no PEP 393 str: no state bits
            lines.append(f'    EMIT("str_{bit}_shift", -1); EMIT("str_{bit}_width", -1);')
            continue
        lines.append(
            f"    {{ PyASCIIObject o; memset(&o, 0, sizeof o); o.state.{bit} = ~0u; "
            f'EMIT("str_{bit}_shift", bit_shift(state_word(&o))); '
            f'EMIT("str_{bit}_width", __builtin_popcount(state_word(&o))); }}'
        )
    if version >= (3, 13):
        lines.append('    EMIT("dbg_size", sizeof(_Py_DebugOffsets));')
        for name, member in DEBUG_FIELDS.items():
            if version < DEBUG_FIELDS_SINCE.get(name, (3, 13)):
                continue
            lines.append(f'    EMIT("dbg_{name}", offsetof(_Py_DebugOffsets, {member}));')
    lines.append('    printf("}\\n");\n    return 0;\n}\n')
    return "\n".join(lines)


def measure(version: V, include: list[str]) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "layout.c"
        exe = Path(tmp) / "layout"
        src.write_text(program(version))
        flags = [f"-I{d}" for d in include] + [f"-I{include[0]}/internal"]
        subprocess.run(["cc", "-w", "-std=gnu11", *flags, str(src), "-o", str(exe)], check=True)
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def split(values: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    layout = {k: v for k, v in values.items() if not k.startswith("dbg_")}
    debug = {k[4:]: v for k, v in values.items() if k.startswith("dbg_")}
    return layout, debug


def header_version(include: list[str]) -> str:
    """PY_VERSION of a header directory, e.g. "3.14.10"."""
    text = (Path(include[0]) / "patchlevel.h").read_text()
    return text.split('#define PY_VERSION', 1)[1].split('"')[1]


def headers_by_version(cache: Path) -> dict[V, list[str]]:
    interpreters, problems = provision_interpreters.provision(cache)
    found: dict[V, list[str]] = {}
    for interp in interpreters:
        if interp["include"]:
            major, minor = (int(p) for p in interp["version"].split("."))
            found.setdefault((major, minor), interp["include"])
    for problem in problems:
        print(f"gen_layouts: {problem}", file=sys.stderr)
    return found


def render(layouts: dict[V, dict[str, int]], debug: dict[V, dict[str, int]], sources: dict[V, str]) -> str:
    return (
        '"""CPython struct offsets per minor version. Generated by tools/gen_layouts.py; do not edit.\n\n'
        "LAYOUTS[v][field] is an offset (or size, or constant) from that version's headers; -1 means\n"
        "the version has no such field. DEBUG_OFFSETS[v][field] is where that field's value sits inside\n"
        "the `_Py_DebugOffsets` block a 3.13+ target publishes about itself. SOURCES[v] is the exact\n"
        'version whose headers were read.\n"""\n\n'
        f"SOURCES = {pprint.pformat(sources, width=100, sort_dicts=True)}\n\n"
        f"LAYOUTS = {pprint.pformat(layouts, width=100, sort_dicts=True)}\n\n"
        f"DEBUG_OFFSETS = {pprint.pformat(debug, width=100, sort_dicts=True)}\n"
    )


def check(layouts: dict[V, dict[str, int]], debug: dict[V, dict[str, int]], sources: dict[V, str]) -> int:
    """Compare with the committed file. Headers of another patch release than the committed
    ones (Debian sid moves on) are only reported: the committed table stays what it was made from."""
    committed: dict[str, object] = {}
    exec(compile(OUTPUT.read_text(), str(OUTPUT), "exec"), committed)  # noqa: S102 - our own file
    old_sources, old_layouts, old_debug = (committed[k] for k in ("SOURCES", "LAYOUTS", "DEBUG_OFFSETS"))
    stale = []
    for version in layouts:
        if old_sources.get(version) != sources[version]:  # type: ignore[attr-defined]
            print(f"gen_layouts: note: {sources[version]} headers here, table made from "
                  f"{old_sources.get(version)}; not compared", file=sys.stderr)  # type: ignore[attr-defined]
            continue
        if old_layouts.get(version) != layouts[version] or old_debug.get(version) != debug.get(version):  # type: ignore[attr-defined]
            stale.append(sources[version])
    if stale:
        print(f"{OUTPUT} is out of date for {', '.join(stale)}: run tools/gen_layouts.py", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    parser.add_argument("--cache", type=Path, default=provision_interpreters.default_cache())
    args = parser.parse_args()
    all_fields = sorted({name for name, _, _ in FIELDS})
    layouts: dict[V, dict[str, int]] = {}
    debug: dict[V, dict[str, int]] = {}
    sources: dict[V, str] = {}
    for version, include in sorted(headers_by_version(args.cache).items()):
        sources[version] = header_version(include)
        layout, dbg = split(measure(version, include))
        layouts[version] = {name: layout.get(name, -1) for name in all_fields} | {
            k: v for k, v in layout.items() if k.startswith("str_")
        }
        if dbg:
            debug[version] = dbg
    if args.check:
        return check(layouts, debug, sources)
    text = render(layouts, debug, sources)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} for {', '.join(f'{v[0]}.{v[1]}' for v in layouts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
