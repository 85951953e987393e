"""Check what an index page shows of a built wheel: python .ci/metadata.py WHEEL

The version is Cargo.toml's, every classifier is one PyPI accepts (trove-classifiers), the
Python 3.x classifiers run from requires-python's 3.9 without a gap, and the license expression,
the license file, the keywords and the project URLs are there.
"""

import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import tomllib
from trove_classifiers import classifiers as KNOWN

ROOT = Path(__file__).resolve().parent.parent


def main(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(z.read(info).decode())
    errors = []

    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]
    if meta["Version"] != cargo:
        errors.append(f"Version {meta['Version']} is not Cargo.toml's {cargo}")

    found = meta.get_all("Classifier") or []
    errors += [f"unknown classifier: {c}" for c in found if c not in KNOWN]
    if any(c.startswith("License ::") for c in found):
        errors.append("a License classifier beside License-Expression (PEP 639 forbids both)")

    if meta["Requires-Python"] != ">=3.9":
        errors.append(f"Requires-Python is {meta['Requires-Python']}, not >=3.9")
    minors = sorted(
        int(m)
        for m in re.findall(r"^Programming Language :: Python :: 3\.(\d+)$", "\n".join(found), re.M)
    )
    if not minors or minors[0] != 9 or minors != list(range(9, minors[-1] + 1)):
        errors.append(f"the Python 3.x classifiers are not 3.9 and every version after: {minors}")

    if meta["License-Expression"] != "MIT":
        errors.append(f"License-Expression is {meta['License-Expression']}")
    if "LICENSE" not in (meta.get_all("License-File") or []) or not any(
        n.endswith(".dist-info/licenses/LICENSE") for n in names
    ):
        errors.append("the wheel does not carry LICENSE")

    urls = {u.split(",", 1)[0].strip() for u in meta.get_all("Project-URL") or []}
    missing = {"Homepage", "Documentation", "Changelog", "Issues"} - urls
    if missing:
        errors.append(f"project URLs missing: {sorted(missing)}")
    if not meta.get("Keywords"):
        errors.append("no keywords")

    if errors:
        raise SystemExit("\n".join(f"{wheel}: {e}" for e in errors))
    print(
        f"metadata ok: {meta['Name']} {meta['Version']}, {len(found)} classifiers, "
        f"Python {minors[0]}..{minors[-1]}, {sorted(urls)}"
    )


if __name__ == "__main__":
    main(sys.argv[1])
