"""`python_c_here` runs a program as ``python -c`` would, although it forks the pytest process."""

from __future__ import annotations

from pathlib import Path

from zygote_support import python_c_here


def test_pytest_settings_do_not_reach_the_program(tmp_path: Path) -> None:
    """Warnings show as python shows them (pytest makes them errors), the tests' modules are not
    importable, signals have python's handlers, and the exit code is python's."""
    warned = python_c_here(
        "import warnings\nwarnings.warn('old', DeprecationWarning)\nprint('went on')", tmp_path
    )
    assert (warned.returncode, warned.stdout) == (0, "went on\n")
    assert "DeprecationWarning: old" in warned.stderr
    alone = python_c_here("import zygote_support", tmp_path)
    assert alone.returncode == 1
    assert "No module named 'zygote_support'" in alone.stderr
    code = (
        "import signal, sys\n"
        "assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL\n"
        "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "assert sys.argv == ['-c'] and sys.path[0] == ''\n"
        "sys.exit(3)\n"
    )
    signals = python_c_here(code, tmp_path)
    assert (signals.returncode, signals.stderr) == (3, "")
