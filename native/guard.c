/*
 * The terminal, given back however pytop dies. The live view puts the terminal in raw mode, on
 * the alternate screen, with mouse reporting and bracketed paste on; Python puts it back on
 * every way out it sees (q, an exception, SIGTERM), but not when the process dies of a fatal
 * signal in C code (an assertion in a library: SIGABRT; a crash: SIGSEGV). The user was then
 * left in the alternate screen with mouse reporting on and typed commands invisible until
 * `reset`. These handlers write the sequences that undo the view's modes and restore the
 * terminal's settings as they were before it started, then let the signal do what it did
 * before (a core, the shell's "Aborted"). Only async-signal-safe calls: write, tcsetattr,
 * sigaction, raise.
 */
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "internal.h"

static const int FATAL[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define FATAL_COUNT (sizeof FATAL / sizeof FATAL[0])

/* Mouse reporting (all of xterm's modes), bracketed paste, focus events and the alternate
 * screen off; the cursor shown; attributes reset. */
static const char RESTORE[] = "\033[?1000l\033[?1002l\033[?1003l\033[?1006l\033[?1015l\033[?2004l\033[?1004l"
                              "\033[?1049l\033[?25h\033[0m\r\n";

static int guarded_fd = -1;
static struct termios saved;
static bool have_saved;
static struct sigaction previous[FATAL_COUNT];

static void restore_terminal(int sig) {
    if (guarded_fd >= 0) {
        ssize_t written = write(guarded_fd, RESTORE, sizeof RESTORE - 1);
        (void)written; /* nothing more can be done from here */
        if (have_saved) tcsetattr(guarded_fd, TCSAFLUSH, &saved);
    }
    for (size_t i = 0; i < FATAL_COUNT; i++)
        if (FATAL[i] == sig) sigaction(sig, &previous[i], NULL);
    raise(sig); /* as before: the default action, or the handler that was there */
}

int pytop_guard_terminal(int fd) {
    if (fd < 0) return PYTOP_ERR_ARGS;
    have_saved = tcgetattr(fd, &saved) == 0;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = restore_terminal;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_NODEFER; /* raise() from the handler reaches the restored action at once */
    for (size_t i = 0; i < FATAL_COUNT; i++)
        if (sigaction(FATAL[i], &act, &previous[i]) != 0) return PYTOP_ERR_ARGS;
    guarded_fd = fd;
    return PYTOP_OK;
}

void pytop_unguard_terminal(void) {
    if (guarded_fd < 0) return;
    for (size_t i = 0; i < FATAL_COUNT; i++) sigaction(FATAL[i], &previous[i], NULL);
    guarded_fd = -1;
}
