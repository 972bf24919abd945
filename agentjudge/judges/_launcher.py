"""The launcher a command judge runs its command under on Linux: a child subreaper.

Run as a script with the judge's own interpreter (``python -I -S _launcher.py shell|exec
COMMAND...``), never imported by the package; standard library only. It marks *itself* a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``; the judge's own process is never marked), starts
the command and waits for it. A process the command orphans -- a ``setsid -f`` daemon, a double
fork -- is then re-parented to the launcher instead of to init, so it stays a descendant of the
launcher's session leader and `agentjudge.judges._proctree.kill_tree` finds and kills it on a
timeout. The launcher reaps every child it adopts while it waits (no zombies pile up); when the
command ends it exits with the command's status (re-raising the signal that killed it), and
whatever the command left running is left alone, re-parented onward.

Protocol with the judge: standard input and output are the command's (its standard error is
merged into its output); the launcher's own standard error is a status channel. It is closed
without a word once the command started; if the command cannot be started, the launcher writes
``<errno>TAB<message>`` there and exits 127.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
"""The ``prctl`` option (linux/prctl.h)."""


def become_subreaper() -> bool:
    """Mark this process a child subreaper; False where the platform refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def spawn(mode: str, command: list[str]) -> int:
    """Start the command (``mode`` "shell": one string for ``/bin/sh -c``) and return its pid."""
    argv = ["/bin/sh", "-c", command[0]] if mode == "shell" else command
    return os.posix_spawnp(
        argv[0],
        argv,
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, 1, 2)],  # stderr into the merged output
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # Python ignores these; the command must not
    )


def wait_for(pid: int) -> int:
    """Reap children (the command and every orphan adopted meanwhile) until ``pid`` exits."""
    while True:
        reaped, status = os.waitpid(-1, 0)
        if reaped == pid:
            return os.waitstatus_to_exitcode(status)


def exit_like(code: int) -> int:
    """Exit as the command did: its exit code, or death by the same signal."""
    if code >= 0:
        return code
    signum = -code
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command dumped core, if anyone
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum  # a signal whose default action does not end a process


def main(argv: list[str]) -> int:
    """Run ``argv`` = ``[mode, *command]``; the exit status is the command's."""
    become_subreaper()
    try:
        pid = spawn(argv[0], argv[1:])
    except OSError as exc:
        sys.stderr.write(f"{exc.errno}\t{exc.strerror or exc}\n")
        return 127
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)  # started: close the status channel (the judge reads end of file)
    os.close(devnull)
    return exit_like(wait_for(pid))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
