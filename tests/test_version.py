"""``rankfusion.__version__`` is the installed distribution's version, read only when asked."""

import importlib.metadata
import subprocess
import sys

import rankfusion


def test_version_is_the_installed_metadata():
    assert rankfusion.__version__ == importlib.metadata.version("rankfusion")
    assert "__version__" in dir(rankfusion)


def test_import_and_commands_do_not_read_the_metadata():
    # importlib.metadata costs more than the whole package's import: only --version pays for it.
    code = (
        "import sys, rankfusion, rankfusion.cli\n"
        "rankfusion.cli.build_parser().parse_args(['fuse', 'a.run'])\n"
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"


def test_version_option_prints_the_installed_version():
    p = subprocess.run(
        [sys.executable, "-m", "rankfusion", "--version"], capture_output=True, text=True
    )
    assert (p.returncode, p.stdout, p.stderr) == (
        0,
        f"rankfusion {importlib.metadata.version('rankfusion')}\n",
        "",
    )
