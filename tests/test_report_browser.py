"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, which .ci/run
installs) loads the report of a comparison of the shipped Vaswani runs, with every network
name unresolvable, and must log no console message, raise no error, fail to load nothing, and
show every figure at a non-zero size; then it takes a screenshot, which must be a picture (not
a blank page).

The page's own markup is loaded as it is for the screenshot; for the checks, a copy gets a
small probe script first in its ``<head>`` (the report has no script of its own) that records
errors and, once the page has loaded, each image's state into the DOM that Chromium dumps.

Skipped where no Chromium can be found, unless RANKFUSION_REQUIRE_BROWSER=1 (set by .ci/run
once it has installed Chromium): then a missing browser fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import rankfusion

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from _third_run import write_fused_run  # noqa: E402

PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  var where = e.target && e.target !== window ? (e.target.src || e.target.href || e.target.tagName) : "";
  window.__errors.push(String(e.message || "failed to load") + " " + where);
}, true);
window.addEventListener("unhandledrejection", function (e) { window.__errors.push(String(e.reason)); });
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (i) {
    var box = i.getBoundingClientRect();
    return [i.complete, i.naturalWidth, i.naturalHeight, box.width, box.height];
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({errors: window.__errors, images: images,
                                    title: document.title});
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("RANKFUSION_REQUIRE_BROWSER") == "1":
        pytest.fail("RANKFUSION_REQUIRE_BROWSER=1 but no Chromium on PATH")
    pytest.skip("no Chromium (Debian: apt-get install chromium; .ci/run installs it)")


def run_browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--mute-audio",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing on the network can load
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def png_size(path: Path) -> tuple:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", header
    return struct.unpack(">II", header[16:24])


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    pytest.importorskip("matplotlib")
    folder = tmp_path_factory.mktemp("report")
    data = ROOT / "data" / "vaswani"
    bm25, minilm = str(data / "bm25.run.gz"), str(data / "minilm.run.gz")
    fused = write_fused_run([bm25, minilm], str(folder / "rrf.run"))
    cmp = rankfusion.compare(
        [bm25, minilm, fused],
        str(data / "qrels.txt"),
        metrics="ndcg@10,map",
        baseline="rrf.run",
        permutations=20_000,
    )
    path = folder / "report.html"
    cmp.to_html(path)
    return path


def test_the_report_loads_cleanly_with_every_image(report, tmp_path):
    page = report.read_text(encoding="utf-8")
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    done = run_browser(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probed.as_uri())
    assert done.returncode == 0, done.stderr
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:] + done.stderr
    probe = json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<"))
    assert probe["errors"] == []
    assert probe["title"] == "rankfusion compare: 3 runs"
    # 2 tests (each run against the fusion) x 2 metrics: one figure each, loaded and laid out.
    assert len(probe["images"]) == 4
    for complete, width, height, shown_width, shown_height in probe["images"]:
        assert complete and width > 0 and height > 0, probe["images"]
        assert shown_width > 300 and shown_height > 100, probe["images"]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == []


def test_a_screenshot_of_the_report(report, tmp_path):
    shot = tmp_path / "report.png"
    done = run_browser(tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", report.as_uri())
    assert done.returncode == 0, done.stderr
    assert shot.stat().st_size > 20_000
    assert png_size(shot) == (1280, 2400)
    image = pytest.importorskip("matplotlib.image").imread(shot)
    # A page with tables and figures: many colours, not one.
    pixels = image.reshape(-1, image.shape[-1])
    assert len({tuple(p) for p in pixels[::97].round(2).tolist()}) > 20
    keep = os.environ.get("RANKFUSION_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
