"""The thread that frees what an interrupted call made (``rust/py/signals.rs``, ``free_later``):
started with the call's garbage, it frees a slice at a time, so that the call raises at once."""

import threading
import time


def _free(garbage):
    time.sleep(0.1)  # the interrupted call returns first
    # Python code between two slices: the interpreter may switch threads there.
    while garbage.free_some():
        pass


def start(garbage):
    threading.Thread(target=_free, args=(garbage,), name="rankfusion-free", daemon=True).start()
