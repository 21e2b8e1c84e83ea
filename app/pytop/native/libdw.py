"""Native (C) stacks of a process's threads, through elfutils' libdw when the machine has it
(`pytop --dump --native`): its DWARF call-frame unwinder, and its symbols and line tables.

libdw is loaded at run time (cffi's ABI mode, no compiler and no headers needed), so pytop
installs and runs where it is absent; `why_unavailable()` says why not when it is. The threads must be
stopped by the calling thread's ptrace (the unwinder's blocking mode, held): libdw then reads
their registers and memory itself and attaches to nothing. Every walk is bounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.visible import visible
from .stateless import demangled

if TYPE_CHECKING:
    from cffi import FFI

LIBRARY = "libdw.so.1"
DW_TAG_INLINED_SUBROUTINE, DW_TAG_SUBPROGRAM = 0x1D, 0x2E
DW_AT_CALL_FILE, DW_AT_CALL_LINE = 0x58, 0x59
MAX_INLINED = 32  # inlined calls shown per native frame
MAX_FRAMES = 512  # native frames read per thread
HOW_TO_GET = "install elfutils' libdw (Debian, Ubuntu: apt install libdw1; Fedora, RHEL: dnf install elfutils-libs)"

# What pytop calls of libdw, declared for cffi when first needed (_load): parsing these costs
# ~50 ms of CPU (cffi loads a C parser), which every start-up paid for a flag few runs use.
DECLARATIONS = """
typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Frame Dwfl_Frame;
typedef struct Dwfl_Line Dwfl_Line;
typedef struct Elf Elf;
typedef struct Dwarf_Files Dwarf_Files;
typedef struct { void *addr; void *cu; void *abbrev; long padding; } Dwarf_Die;
typedef struct { unsigned int code; unsigned int form; unsigned char *valp; void *cu; } Dwarf_Attribute;
Dwarf_Die *dwfl_module_addrdie(Dwfl_Module *mod, uint64_t addr, uint64_t *bias);
int dwarf_getscopes(Dwarf_Die *cudie, uint64_t pc, Dwarf_Die **scopes);
int dwarf_getscopes_die(Dwarf_Die *die, Dwarf_Die **scopes);
int dwarf_tag(Dwarf_Die *die);
const char *dwarf_diename(Dwarf_Die *die);
Dwarf_Attribute *dwarf_attr(Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result);
int dwarf_formudata(Dwarf_Attribute *attr, uint64_t *return_uval);
int dwarf_getsrcfiles(Dwarf_Die *cudie, Dwarf_Files **files, size_t *nfiles);
const char *dwarf_filesrc(Dwarf_Files *file, size_t idx, uint64_t *mtime, uint64_t *length);
void free(void *pointer);
typedef struct {
    void *find_elf;
    void *find_debuginfo;
    void *section_address;
    char **debuginfo_path;
} Dwfl_Callbacks;
Dwfl *dwfl_begin(const Dwfl_Callbacks *callbacks);
void dwfl_end(Dwfl *dwfl);
int dwfl_linux_proc_report(Dwfl *dwfl, int pid);
int dwfl_report_end(Dwfl *dwfl, void *removed, void *arg);
int dwfl_linux_proc_attach(Dwfl *dwfl, int pid, _Bool assume_ptrace_stopped);
int dwfl_getthread_frames(Dwfl *dwfl, int tid, int (*callback)(Dwfl_Frame *state, void *arg), void *arg);
_Bool dwfl_frame_pc(Dwfl_Frame *state, uint64_t *pc, _Bool *isactivation);
Dwfl_Module *dwfl_addrmodule(Dwfl *dwfl, uint64_t address);
const char *dwfl_module_addrname(Dwfl_Module *mod, uint64_t address);
const char *dwfl_module_info(Dwfl_Module *mod, void ***userdata, uint64_t *start, uint64_t *end,
                             uint64_t *dwbias, uint64_t *symbias, const char **mainfile, const char **debugfile);
Dwfl_Line *dwfl_module_getsrc(Dwfl_Module *mod, uint64_t addr);
const char *dwfl_lineinfo(Dwfl_Line *line, uint64_t *addr, int *linep, int *colp, uint64_t *mtime, uint64_t *length);
int dwfl_core_file_report(Dwfl *dwfl, Elf *elf, const char *executable);
int dwfl_core_file_attach(Dwfl *dwfl, Elf *elf);
unsigned int elf_version(unsigned int version);
Elf *elf_begin(int fd, int cmd, Elf *ref);
int elf_end(Elf *elf);
int dwfl_errno(void);
const char *dwfl_errmsg(int error);
int dwfl_linux_proc_find_elf(Dwfl_Module *mod, void **userdata, const char *module_name, uint64_t base,
                             char **file_name, Elf **elfp);
int dwfl_standard_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, uint64_t base,
                                 const char *file_name, const char *debuglink_file, uint32_t debuglink_crc,
                                 char **debuginfo_file_name);
"""

_ffi: FFI  # set with _lib, once loaded (_load): no use comes before
_lib: Any = None
_why_not: str | None = None


def _load() -> Any:
    global _ffi, _lib, _why_not
    if _lib is None and _why_not is None:
        from cffi import FFI

        ffi = FFI()
        ffi.cdef(DECLARATIONS)
        try:
            _lib = ffi.dlopen(LIBRARY)
            _ffi = ffi
        except OSError as exc:
            _why_not = f"{LIBRARY} cannot be loaded ({exc}): {HOW_TO_GET}"
    return _lib


def why_unavailable() -> str | None:
    """None when native stacks can be read here, else why not and how to fix it."""
    _load()
    return _why_not


@dataclass(frozen=True)
class NativeFrame:
    function: str  # the symbol ("?" when the library has none for the address)
    library: str  # the file it is in (its base name)
    filename: str  # its source file, where debug info says ("" otherwise)
    line: int  # ... and line (-1 otherwise)


def _text(pointer: Any) -> str:
    if pointer == _ffi.NULL:
        return ""
    raw = _ffi.string(pointer)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


ELF_C_READ_MMAP = 8  # libelf's Elf_Cmd
EV_CURRENT = 1


class NativeStacks:
    """The native stacks of process `pid`'s threads, whose threads the calling thread holds
    stopped with ptrace; or, with `core`, of the threads a core file holds (`executable`: the
    program's file, where it is now). Close it (or use a with block) to free libdw's state."""

    def __init__(self, pid: int, core: str | None = None, executable: str | None = None):
        lib = _load()
        if lib is None:
            raise OSError(_why_not)
        self._lib = lib
        callbacks: Any = _ffi.new("Dwfl_Callbacks *")
        callbacks.find_elf = _ffi.cast("void *", lib.dwfl_linux_proc_find_elf)
        callbacks.find_debuginfo = _ffi.cast("void *", lib.dwfl_standard_find_debuginfo)
        self._callbacks = callbacks  # libdw keeps a pointer to it
        self._core_fd, self._elf = -1, _ffi.NULL
        self._pid, self._stale = pid if core is None else 0, False
        self._dwfl = lib.dwfl_begin(self._callbacks)
        if self._dwfl == _ffi.NULL:
            raise OSError(f"libdw: {_text(lib.dwfl_errmsg(-1))}")
        if core is None:
            attached = self._attach_live()
        else:
            lib.elf_version(EV_CURRENT)
            self._core_fd = os.open(core, os.O_RDONLY | os.O_CLOEXEC)
            self._elf = lib.elf_begin(self._core_fd, ELF_C_READ_MMAP, _ffi.NULL)
            program = _ffi.new("char[]", executable.encode()) if executable else _ffi.NULL
            attached = self._elf != _ffi.NULL and lib.dwfl_core_file_report(self._dwfl, self._elf, program) >= 0 \
                and lib.dwfl_report_end(self._dwfl, _ffi.NULL, _ffi.NULL) == 0 \
                and lib.dwfl_core_file_attach(self._dwfl, self._elf) >= 0
        if not attached:
            message = _text(lib.dwfl_errmsg(-1))
            self.close()
            raise OSError(f"libdw cannot read {'core file ' + core if core else f'process {pid}'}: {message}")

    def _attach_live(self) -> bool:
        """Report the process's modules to the current Dwfl and attach (its threads are held
        stopped by the caller)."""
        lib = self._lib
        return bool(lib.dwfl_linux_proc_report(self._dwfl, self._pid) == 0
                    and lib.dwfl_report_end(self._dwfl, _ffi.NULL, _ffi.NULL) == 0
                    and lib.dwfl_linux_proc_attach(self._dwfl, self._pid, True) == 0)  # 0, else an errno

    def _renew(self) -> bool:
        """libdw's state for the process made anew (see addresses())."""
        self._lib.dwfl_end(self._dwfl)
        self._dwfl = self._lib.dwfl_begin(self._callbacks)
        self._stale = self._dwfl == _ffi.NULL or not self._attach_live()
        return not self._stale

    def __enter__(self) -> NativeStacks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._dwfl is not None and self._dwfl != _ffi.NULL:
            self._lib.dwfl_end(self._dwfl)
        self._dwfl = None
        if self._elf != _ffi.NULL:
            self._lib.elf_end(self._elf)
            self._elf = _ffi.NULL
        if self._core_fd >= 0:
            os.close(self._core_fd)
            self._core_fd = -1

    def stack(self, tid: int) -> tuple[NativeFrame, ...]:
        """Thread `tid`'s native frames, innermost first; () when libdw cannot unwind it."""
        return self.symbols(self.addresses(tid))

    def symbols(self, pcs: tuple[int, ...]) -> tuple[NativeFrame, ...]:
        """The frames at these addresses (from addresses(): the thread may run again meanwhile,
        as this reads only the program's files)."""
        return tuple(frame for pc in pcs for frame in self._symbol(pc))

    def addresses(self, tid: int) -> tuple[int, ...]:
        """Thread `tid`'s frames as code addresses, innermost first (the part that needs the
        thread stopped: its registers and stack are read). After a thread of which libdw read
        nothing (not stopped: started since the threads were, or ended), its state is made
        anew: elfutils marks a thread attached before it reads its registers and leaves the
        mark when the read fails, and asserts (aborting pytop) at the next thread."""
        lib = self._lib
        pcs: list[int] = []
        if self._stale and not self._renew():
            return ()

        @_ffi.callback("int(Dwfl_Frame *, void *)")
        def on_frame(state: Any, _arg: Any) -> int:
            pc, activation = _ffi.new("uint64_t *"), _ffi.new("_Bool *")
            if not lib.dwfl_frame_pc(state, pc, activation):
                return 1
            # A return address points after its call: the call's own line is one byte before it.
            pcs.append(pc[0] if activation[0] else pc[0] - 1)
            return 0 if len(pcs) < MAX_FRAMES else 1

        lib.dwfl_getthread_frames(self._dwfl, tid, on_frame, _ffi.NULL)
        if not pcs and self._pid:
            self._stale = True
        return tuple(pcs)

    def _symbol(self, pc: int) -> list[NativeFrame]:
        """The function at `pc`, and before it the functions inlined into it there, innermost
        first (where debug info says so: PyStack shows them the same way)."""
        frame = self._function(pc)
        inlined = self._inlined(pc, frame)
        return inlined or [frame]

    def _inlined(self, pc: int, frame: NativeFrame) -> list[NativeFrame]:
        """[innermost inlined function at pc's line, ..., the function they were inlined into at
        the line of its call], or [] without debug info or inlining."""
        lib = self._lib
        module = lib.dwfl_addrmodule(self._dwfl, pc)
        bias = _ffi.new("uint64_t *")
        cu = lib.dwfl_module_addrdie(module, pc, bias) if module != _ffi.NULL else _ffi.NULL
        if cu == _ffi.NULL:
            return []
        scopes = _ffi.new("Dwarf_Die **")
        count, first = lib.dwarf_getscopes(cu, pc - bias[0], scopes), 0
        out, filename, line = [], frame.filename, frame.line
        try:
            # Innermost first: an inlined function at the current place, then the scopes around
            # its DIE (its caller's: their first is the DIE itself), where the place is the line
            # of its call; the subprogram they were all inlined into ends it.
            for _ in range(MAX_INLINED):
                tags = [(i, lib.dwarf_tag(scopes[0] + i)) for i in range(first, max(count, 0))]
                found = next((i for i, tag in tags if tag in (DW_TAG_INLINED_SUBROUTINE, DW_TAG_SUBPROGRAM)), None)
                if found is None or lib.dwarf_tag(scopes[0] + found) != DW_TAG_INLINED_SUBROUTINE:
                    break
                die = scopes[0] + found
                out.append(NativeFrame(f"{visible(_text(lib.dwarf_diename(die)) or '?')} (inlined)", frame.library,
                                       visible(filename), line))
                filename, line = self._call_site(cu, die)
                outer = _ffi.new("Dwarf_Die **")
                outer_count = lib.dwarf_getscopes_die(die, outer)
                lib.free(scopes[0])
                scopes, count, first = outer, outer_count, 1
        finally:
            if count > 0:
                lib.free(scopes[0])
        if out:
            out.append(NativeFrame(frame.function, frame.library, filename, line))
        return out

    def _call_site(self, cu: Any, die: Any) -> tuple[str, int]:
        lib = self._lib
        attribute, value = _ffi.new("Dwarf_Attribute *"), _ffi.new("uint64_t *")
        line = value[0] if lib.dwarf_attr(die, DW_AT_CALL_LINE, attribute) != _ffi.NULL and \
            lib.dwarf_formudata(attribute, value) == 0 else -1
        filename = ""
        if lib.dwarf_attr(die, DW_AT_CALL_FILE, attribute) != _ffi.NULL and lib.dwarf_formudata(attribute, value) == 0:
            files, count = _ffi.new("Dwarf_Files **"), _ffi.new("size_t *")
            if lib.dwarf_getsrcfiles(cu, files, count) == 0 and value[0] < count[0]:
                filename = _text(lib.dwarf_filesrc(files[0], value[0], _ffi.NULL, _ffi.NULL))
        return filename, int(line) if filename else -1

    def _function(self, pc: int) -> NativeFrame:
        lib = self._lib
        module = lib.dwfl_addrmodule(self._dwfl, pc)
        if module == _ffi.NULL:
            return NativeFrame(f"{pc:#x}", "?", "", -1)
        name = _text(lib.dwfl_module_addrname(module, pc)) or f"{pc:#x}"
        library = os.path.basename(_text(lib.dwfl_module_info(module, *[_ffi.NULL] * 7)))
        filename, line = "", -1
        source = lib.dwfl_module_getsrc(module, pc)
        if source != _ffi.NULL:
            number = _ffi.new("int *")
            filename = _text(lib.dwfl_lineinfo(source, _ffi.NULL, number, _ffi.NULL, _ffi.NULL, _ffi.NULL))
            line = number[0] if filename else -1
        # a library's names are its authors' (a target's own, perhaps): shown, never acted on
        return NativeFrame(visible(demangled(name.split("@", 1)[0])), visible(library), visible(filename), line)
