"""``python -m rankfusion``: the ``rankfusion`` command (see ``rankfusion.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
