"""The launcher a command judge runs its command under on Linux: a child subreaper.

Run as a script with the judge's own interpreter (``python -I -S _launcher.py STATUS_FD
shell|exec COMMAND...``), never imported by the package; standard library only. It marks
*itself* a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``; the judge's own process is never
marked), starts the command and waits for it. A process the command orphans -- a ``setsid -f``
daemon, a double fork -- is then re-parented to the launcher instead of to init, so it stays a
descendant of the launcher's session leader and `agentjudge.judges._proctree.kill_tree` finds
and kills it on a timeout. Where the kernel refuses the flag, the command runs all the same
(only such orphans escape). The launcher reaps every child it adopts while it waits (no zombies
pile up); when the command ends it exits with the command's status (re-raising the signal that
killed it), and whatever the command left running is left alone, re-parented onward.

Protocol with `agentjudge.judges._process`: standard input, output and error are the command's
(inherited as they are). ``STATUS_FD`` is the write end of a status pipe, which the command
does not inherit: once the command started the launcher writes ``0<TAB>started`` there and
closes it; if the command cannot be started it writes ``<errno><TAB><message>`` and exits 127.
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
    """Run ``argv`` = ``[status fd, mode, *command]``; the exit status is the command's."""
    status = int(argv[0])
    os.set_inheritable(status, False)  # the command must not hold the status pipe open
    become_subreaper()
    try:
        pid = spawn(argv[1], argv[2:])
    except OSError as exc:
        os.write(status, f"{exc.errno}\t{exc.strerror or exc}\n".encode())
        return 127
    os.write(status, b"0\tstarted\n")
    os.close(status)
    return exit_like(wait_for(pid))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
