"""A recording read back: its windows in order, and the figures of any range of them built by the
same code that built them live (core.intake, core.views), so that a replayed window shows the
table the live view showed for it, figure by figure.

A window is decoded when the figures need it (record/recording.py finds them). The
figures of a range are the drains of its windows taken in from a reset at its start; the names
and stacks the range refers to are learned from every window before it (the engine's stack ids
are reused after an eviction: only the order of the file says what an id stands for then)."""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from .. import files
from ..core.counts import Counts
from ..core.function_sums import FunctionSums
from ..core.intake import fold_finished, learn, take_in
from ..core.model import Circumstances, ReplayPosition, Snapshot
from ..core.profile import Profile, ThreadIdentity
from ..core.records import Drain
from ..core.snapshot import Figures, View
from ..core.sums import BookSums
from ..core.views import snapshot
from . import container, zstd
from .codec import Damaged
from .gcpause import no_collection
from .keys import KeyState, read_key_state
from .payloads import WindowRecord, read_window, read_window_load, window_load
from .recording import Recording, StoredKey, open_recording
from .timeline import Timeline

CHECKPOINT_EVERY = 30  # windows between two checkpoints of a range's state (a step back replays at most these)
MAX_CHECKPOINTS = 64  # per range: a long recording's are thinned, not grown without end
MAX_CHECKPOINT_BYTES = 24 << 20  # ... and their bytes (an hour of churn: ~0.75 MB each, compressed)
CHECKPOINT_LEVEL = 3  # zstd's: an hour's checkpoint in 7 ms, expanded in 2 (zlib's fastest: 20 and 8, 20% larger)
WARM_WINDOWS = 300  # how far back from the cursor an idle replay makes checkpoints (10 minutes of 2 s windows)
RESTORE_AHEAD = 4  # a checkpoint this many windows past the last taken in is restored, not read up to


class TreeCheck:
    """What makes the recorded stack book a forest, checked as it is learned: a node's parent is
    live when it is made, one frame further out; a node with live children is not evicted (an id
    reused under them would make a loop). The engine keeps both; a crafted file may not, and the
    walks over stacks (the table's, exports') must end."""

    def __init__(self) -> None:
        self.children: dict[int, int] = {}
        self.depth: dict[int, int] = {}
        self.parents: dict[int, int] = {}

    def sound(self, drains: Sequence[Drain]) -> bool:
        """Learn a window's evictions and nodes; False, having learned none of them, if they
        break the rules (the window is then not taken in at all: what is known here stays what
        the stack book knows)."""
        undo: list[tuple[dict[int, int], int, int | None]] = []  # (table, key, its value before: None, none)
        for d in drains:
            if not self._learn(d, undo):
                for table, key, old in reversed(undo):
                    if old is None:
                        table.pop(key, None)
                    else:
                        table[key] = old
                return False
        return True

    def _learn(self, d: Drain, undo: list[tuple[dict[int, int], int, int | None]]) -> bool:
        # (each change logged inline: a call a change was a third of a replay's time per window)
        children, depth, parents, log = self.children, self.depth, self.parents, undo.append
        for node in d.evicted:
            if children.get(node, 0):
                return False
            if node in depth:
                parent = parents.get(node, 0)
                log((depth, node, depth.pop(node)))
                if node in children:
                    log((children, node, children.pop(node)))
                if node in parents:
                    log((parents, node, parents.pop(node)))
                if parent:
                    old = children.get(parent)
                    log((children, parent, old))
                    children[parent] = (old or 0) - 1
        for n in d.nodes:
            node, parent = n.node, n.parent
            if node == 0 or node in depth:
                return False
            if parent:
                if depth.get(parent, -2) != n.depth - 1:
                    return False
                old = children.get(parent)
                log((children, parent, old))
                children[parent] = (old or 0) + 1
            elif n.depth:
                return False
            log((depth, node, None))
            depth[node] = n.depth
            log((parents, node, parents.get(node)))
            parents[node] = parent
        return True


class Replay:
    """The figures of a recording's windows, one range at a time (the whole recording by
    default), each window's snapshot built as the live view built it."""

    def __init__(self, recording: Recording, checkpoint_every: int = CHECKPOINT_EVERY, keys: bool = True):
        """keys: start a range at the key frame before it (False: from the file's start, as a
        test holds them against each other)."""
        self.recording = recording
        self.keys = keys
        self.checkpoint_every = checkpoint_every
        # The state after some windows of the current range (index -> its pickle): a step back
        # starts from the nearest one before it, not from the file's start.
        self._checkpoints: dict[int, tuple[int, bytes]] = {}  # (its pickle's size, compressed)
        # The session range's (from window 0), kept while another range is shown: a range that
        # starts at the cursor learns the names and stacks before it from one of these, not
        # from the key frame before it (up to five minutes of windows: 0.2-0.45 s an hour in).
        self._session: dict[int, tuple[int, bytes]] = {}
        self._file = files.open_regular(recording.path)
        self._figures = Figures()
        self._sums = BookSums(self._figures.book)
        self._at = -1  # the last window taken in
        self._first = 0  # the range's first window
        self._whole = False  # the range taken in as one window
        self._span = 0.0  # seconds of samples in the range's windows
        self._clock = 0.0  # the session's seconds at the last window taken in
        self._elapsed_live = 0.0  # ... as that window's live view said (since its reset)
        self._range_from = 0.0  # the session's seconds where the range starts
        self._offset = 0.0  # the session's seconds at the view's last reset
        self._records: dict[int, WindowRecord] = {}  # the last window's, for its circumstances
        self._tree = TreeCheck()
        self._from_session = False  # the range's totals came from a key's: the session's from its start
        self._front_totals: bool | None = None  # a rotated file's first key holds totals (None: not read yet)
        self.damaged = 0  # windows that did not decode (shown as gaps)
        self.windows_read = 0  # decoded so far (what seeking cost)
        self.timeline = Timeline(len(recording.windows))  # the target's CPU, window by window

    def close(self) -> None:
        self._file.close()

    def grow(self) -> bool:
        """A recording still being written: its windows since it was opened join it (what was
        taken in and kept stays valid: the file is only ever appended to). False when the file
        under its name is another (rotated, or begun again): open it anew."""
        again = open_recording(self.recording.path)
        known = self.recording.windows
        if again.inode != self.recording.inode or again.windows[:len(known)] != known:
            return False
        self.recording = again
        self.timeline.grow(len(again.windows))
        return True

    def __len__(self) -> int:
        return len(self.recording.windows)

    def _record(self, index: int) -> WindowRecord | None:
        self.windows_read += 1
        try:
            return read_window(container.payload(self._file, self.recording.windows[index].frame))
        except (Damaged, ValueError, zlib.error):
            self.damaged += 1
            return None

    def seek(self, index: int, first: int = 0, whole: bool = False, stop: Callable[[], bool] | None = None,
             every: int | None = None) -> Figures:
        """The figures of windows first..index, index's the open window (whole: the range is
        one window, as a --batch run's): taken in from where the last seek left them, or the
        nearest checkpoint, when that is on the way, else from a key or the start of the file.
        stop: asked before each window; True leaves the figures at the last window taken in
        (work ahead that a key press interrupts: see warm). every: windows between checkpoints
        kept on the way (default: the replay's checkpoint_every)."""
        every = every or self.checkpoint_every
        index = max(0, min(index, len(self) - 1))
        first = max(0, min(first, index))
        if first != self._first or whole != self._whole:
            self._checkpoints = self._range_changes(first, whole)
        ahead = max((at for at in self._checkpoints if self._at + RESTORE_AHEAD < at <= index), default=None)
        # (nothing taken in yet counts as a step back: a rotated file's windows need its key)
        if ahead is not None and self._at >= 0:
            self._restore(ahead)
            self._sums = BookSums(self._figures.book)
        elif self._at < 0 or first != self._first or index < self._at or whole != self._whole:
            self._figures = Figures()
            self._tree = TreeCheck()
            self._at, self._first, self._whole, self._span = -1, first, whole, 0.0
            self._clock = self._elapsed_live = self._range_from = self._offset = 0.0
            self._records = {}
            self._from_session = False
            nearest = max((at for at in self._checkpoints if at <= index), default=None)
            learned = max((at for at in self._session if at < first), default=None)
            if nearest is not None:
                self._restore(nearest)
            elif learned is not None:  # what windows before the range teach, from the session's
                self._restore(learned, self._session)
                self._span, self._range_from, self._records, self._from_session = 0.0, 0.0, {}, False
            elif self.keys and not (first == 0 and self._start_at_totals(index, whole)):
                self._start_at_key(first)
            self._sums = BookSums(self._figures.book)
        f = self._figures
        for i in range(self._at + 1, index + 1):
            if stop is not None and stop():
                self._at = i - 1
                return f
            record = self._record(i)
            starts = i == first and not self._from_session  # (a key's totals: the range began with the session)
            if starts:  # the range starts: what came before taught the names only
                self._figures = f = Figures(book=f.book, threads=f.threads)
                f.threads.reset()
            if not (whole and (i > first or self._from_session)):  # (whole from a key: its totals so far)
                f.window, f.window_table = Counts(), FunctionSums(f.book)  # as each window opened live
            if record is not None and not self._tree.sound(record.drains):
                self.damaged += 1  # a stack tree that would not be one (crafted): the window is passed over
                record = None
            if record is not None:
                # The session's time at the window's close, as the live view counted it (its
                # elapsed restarts at a reset); a range's time is the difference.
                elapsed = record.circumstances.elapsed
                if record.reset or elapsed < self._elapsed_live:
                    self._offset = self._clock  # the view's elapsed started again here
                before = self._clock
                self._elapsed_live = elapsed
                self._clock = self._offset + elapsed  # (exactly the view's, until a reset)
                if starts:
                    self._range_from = before
                if i >= first:
                    self._span += record.circumstances.window_seconds
                for d in record.drains:
                    for p in d.processes:
                        f.book.pids.setdefault(p.process, p.pid)
                    (take_in if i >= first else learn)(f, d)
                self._records = {i: record}
                self.timeline.learn(i, window_load(record).cpu_pct)
            else:
                self._records = {}
                self.timeline.gap(i)
            fold_finished(f)  # as the window closed live, before its snapshot
            if i > first and (i - first) % every == 0 and i not in self._checkpoints:
                self._at = i
                self._keep(i)
        self._at = index
        if index > first and (index - first) % every == 0 and index not in self._checkpoints:
            self._keep(index)  # (reached from the key after it: work ahead waits for this one)
        return f

    def fill_timeline(self, stop: Callable[[], bool]) -> bool:
        """Work ahead while the view waits: the timeline's unknown points, each window's load
        read alone (~1 ms a window of churn), until `stop`; whether any is left. (A frame that
        does not decode is a gap there: counted as damaged when a seek reads it, not here.)"""
        def read(index: int) -> float | None:
            try:
                return read_window_load(container.payload(self._file, self.recording.windows[index].frame)).cpu_pct
            except zlib.error as exc:
                raise Damaged(str(exc)) from None

        return self.timeline.fill(read, stop)

    def warm(self, index: int, first: int = 0, stop: Callable[[], bool] | None = None) -> bool:
        """Work ahead while the view waits: checkpoints of range `first` every third of
        checkpoint_every windows (making one costs: a seek makes fewer on its way) over the
        WARM_WINDOWS before `index`, so that a step back from there replays at most that many
        windows, never the stretch from the key frame before it (up to five minutes of them).
        The nearest missing checkpoint first; the state at `index` is kept
        first, so coming back to it is a restore. Returns whether more is left to do (call
        again while idle); `stop` interrupts between windows, what was done stays done."""
        index = max(0, min(index, len(self) - 1))
        first = max(0, min(first, index))
        if first != self._first or self._whole:
            return False  # (a range the view does not show: the next seek sets it)
        every = max(1, self.checkpoint_every // 3)
        wanted = [at for at in range(index - (index - first) % every, max(first, index - WARM_WINDOWS), -every)
                  if at > first and at not in self._checkpoints]
        def full() -> bool:  # (work ahead never makes checkpoints to be thinned, and so never loops)
            return len(self._checkpoints) >= MAX_CHECKPOINTS - 1 or \
                self._checkpoint_bytes >= MAX_CHECKPOINT_BYTES * 3 // 4

        self._make_room(index)
        if not wanted or full():
            return False
        if self._at == index and index not in self._checkpoints:
            self._keep(index)
        self.seek(wanted[0], first, stop=lambda: full() or (stop is not None and stop()), every=every)
        return self._at < wanted[0] or len(wanted) > 1

    def _range_changes(self, first: int, whole: bool) -> dict[int, tuple[int, bytes]]:
        """The checkpoints of the range (first, whole) the replay moves to: the session's when
        it goes back to them; none else. Leaving the session's range, those within WARM_WINDOWS
        before the new range's start are kept for it (the bound holds both)."""
        if self._first == 0 and not self._whole:
            self._session = {at: kept for at, kept in self._checkpoints.items() if first - WARM_WINDOWS <= at < first}
        return self._session if first == 0 and not whole else {}

    def _make_room(self, index: int) -> None:
        """Past three quarters of the bound, checkpoints away from the cursor go, the farthest
        first, for ones behind it: the view steps back from where it is, and forward from where
        it is needs none (checkpoints of an hour filled the bound at ten minutes around an
        earlier cursor, and a step back from a later one read 130 windows)."""
        near = range(index - WARM_WINDOWS, index + self.checkpoint_every + 1)
        far = sorted((at for at in self._checkpoints if at not in near), key=lambda at: abs(at - index))
        while far and self._checkpoint_bytes >= MAX_CHECKPOINT_BYTES * 3 // 4:
            if self._session and self._session is not self._checkpoints:
                self._session = {}  # (the range has started: those were for starting it)
            else:
                del self._checkpoints[far.pop()]

    def _start_at_key(self, first: int) -> None:
        """Start from the last key frame at or before window `first` that reads whole (its
        names, stacks, threads and clock: what every window before it would have taught),
        instead of from the file's start."""
        for key in reversed(self.recording.keys):
            if key.index > first:
                continue
            try:
                state = read_key_state(container.payload(self._file, key.frame))
            except (Damaged, ValueError, zlib.error):
                self.damaged += 1
                continue
            if state.book is None:  # (a key of version 1: nothing to start from but the file's start)
                break
            figures, tree = Figures(), TreeCheck()
            if not tree.sound((state.book,)):
                self.damaged += 1
                continue
            for p in state.book.processes:
                figures.book.pids.setdefault(p.process, p.pid)
            learn(figures, state.book)
            self._figures, self._tree = figures, tree
            self._clock, self._offset, self._elapsed_live = state.clock
            self._at = key.index - 1
            return

    def _start_at_totals(self, index: int, whole: bool = False) -> bool:
        """A range from the recording's start: from the last key frame up to window `index` that
        holds the session's totals (what every window before it summed to), the windows after
        it taken in; whole: the range as one window, which the totals are so far too (not when
        their tables folded rows past a bound: the window's never do, and a --batch table shows
        both). False: no such key (nothing is changed). In a rotated file the totals are
        the session's from its start: the part rotated away is in them, its detail is not (and
        only when the key the file now starts at has them: else every range from its start is
        what the file keeps, not some the session's and some not)."""
        keys = self.recording.keys
        if self.recording.rotation is not None and keys and keys[0].index == 0:
            if self._front_totals is None:
                self._front_totals = self._key_state(keys[0]) is not None
            if not self._front_totals:
                return False
        for key in reversed(keys):
            if key.index > index + 1:
                continue
            state = self._key_state(key)
            if state is None or state.book is None or state.totals is None:
                continue
            totals = state.totals
            if whole and totals.folded:
                return False
            # A key right after the window holds the state the window left: only the window's
            # own figures are read (a recording's last window, and the key its end wrote).
            after = self._record(index) if key.index == index + 1 else None
            if key.index == index + 1 and after is None:
                continue
            figures, tree = Figures(), TreeCheck()
            if not tree.sound((state.book,)):
                self.damaged += 1
                continue
            for p in state.book.processes:
                figures.book.pids.setdefault(p.process, p.pid)
            learn(figures, state.book)
            figures.total, figures.totals, figures.threads = (totals.total, totals.sums(figures.book),
                                                              totals.thread_book())
            if whole:
                figures.window, figures.window_table = totals.counts(), totals.sums(figures.book)
            self._figures, self._tree = figures, tree
            self._clock, self._offset, self._elapsed_live = state.clock
            self._span, self._range_from, self._at = totals.span, 0.0, key.index - 1
            self._from_session = True
            if after is not None:
                self._window_after(index, after, whole)
            return True
        return False

    def _window_after(self, index: int, record: WindowRecord, whole: bool) -> None:
        """Window `index`'s own figures, on top of the state after it (the key that follows it):
        its drains counted into the open window alone, as live (the totals, names, stacks and
        threads are the key's already)."""
        f = self._figures
        if not whole:
            f.window, f.window_table = Counts(), FunctionSums(f.book)
            for d in record.drains:
                f.window.forget(d.evicted)
                f.window.add_drain(d)
                f.window_table.add_rows(d.function_rows, d.line_rows)
        self._records = {index: record}
        self.timeline.learn(index, window_load(record).cpu_pct)

    def _key_state(self, key: StoredKey) -> KeyState | None:
        """What a key frame holds, if it reads whole and holds the session's totals."""
        try:
            state = read_key_state(container.payload(self._file, key.frame))
        except (Damaged, ValueError, zlib.error):
            self.damaged += 1
            return None
        return state if state.totals is not None else None

    # What a checkpoint holds: everything the windows after it are taken in on top of.
    _STATE = ("_figures", "_tree", "_at", "_span", "_clock", "_elapsed_live", "_range_from", "_offset", "_records",
              "_from_session")

    def _keep(self, index: int) -> None:
        """The state after window `index`, kept (pytop's own objects: pickled here, unpickled
        only from here; never from a file). At most MAX_CHECKPOINTS and MAX_CHECKPOINT_BYTES:
        past either, every other goes."""
        with no_collection():
            state = pickle.dumps(tuple(getattr(self, name) for name in self._STATE), protocol=pickle.HIGHEST_PROTOCOL)
        packed = zstd.compress(state, level=CHECKPOINT_LEVEL) if zstd.available else zlib.compress(state, 1)
        self._checkpoints[index] = (len(state), packed)
        if self._checkpoint_bytes > MAX_CHECKPOINT_BYTES and self._session is not self._checkpoints:
            self._session = {}
        if len(self._checkpoints) > MAX_CHECKPOINTS or self._checkpoint_bytes > MAX_CHECKPOINT_BYTES:
            for at in sorted(self._checkpoints)[1::2]:
                del self._checkpoints[at]

    @property
    def _checkpoint_bytes(self) -> int:
        """The bytes of the range's checkpoints and of the session's kept beside them."""
        kept = (self._checkpoints,) if self._session is self._checkpoints else (self._checkpoints, self._session)
        return sum(len(packed) for checkpoints in kept for _, packed in checkpoints.values())

    def _restore(self, index: int, kept: dict[int, tuple[int, bytes]] | None = None) -> None:
        size, packed = (self._checkpoints if kept is None else kept)[index]
        with no_collection():
            state = pickle.loads(zstd.expand(packed, None, size) if zstd.available else  # noqa: S301 (our own)
                                 zlib.decompress(packed))
        for name, value in zip(self._STATE, state):
            setattr(self, name, value)

    def snapshot(self, index: int, view: View, first: int = 0, whole: bool = False) -> Snapshot:
        """Window `index` as the live view showed it, with the range's totals from `first` (whole:
        the range's figures as one window, as a --batch run of that time would show them)."""
        f = self.seek(index, first, whole)
        f.book.show_tasks(view.tasks)
        record = self._records.get(index)
        windows = self.recording.windows
        c = record.circumstances if record is not None else Circumstances(window_seconds=1.0, elapsed=1.0,
                                                                           rate_asked=self.recording.run.rate)
        # (a rotated file's totals from a key are the session's: they start where it started)
        rotated = self._from_session and first == 0 and self.recording.rotation is not None
        range_start = self.recording.run.started if rotated else windows[first].start
        position = ReplayPosition(self.recording.path, index, len(windows), windows[index].start, windows[index].end,
                                  range_start, self.recording.start, self.recording.end,
                                  first=first, gap=record is None, timeline=self.timeline.series())
        c = replace(c, elapsed=max(self._clock - self._range_from, 1e-9), replay=position,
                    exited=False, exit_reason=None, failure=None, exit_status=None)
        if whole:
            c = replace(c, window_seconds=max(self._span, 1e-9), pytop_cpu_pct=None)
        return snapshot(self.recording.run.target, f, view, self._sums, c)

    def profile(self, index: int, first: int = 0) -> Profile:
        """Windows first..index as a profile, for reports and exports."""
        f = self.seek(index, first, self._whole)
        threads = {key: ThreadIdentity(t.native_id or None, t.name, t.pid) for key, t in f.threads.threads.items()}
        target = self.recording.run.target
        subprocesses = len({t.pid for t in f.threads.threads.values()}) > 1
        return Profile(f.total, f.book, threads, target.pid, target.command, subprocesses=subprocesses)
