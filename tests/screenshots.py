"""The README's pictures of the exposure map, regenerated from the bundled examples.

    python -m tests.screenshots            # docs/images/*.png and the README's Mermaid block

- docs/images/exposure-map.png: the HTML report's map of tests/fixtures/clusters/drifted.json
  (the README's example), as Debian's headless Chromium draws it (tests/browser.py);
- docs/images/exposure-map-channels.png: the map of tests/fixtures/clusters/exposure.yaml,
  which opens a way in through every channel the model knows;
- the README's Mermaid block between `<!-- exposure-map:start -->` and `<!-- exposure-map:end -->`:
  the Markdown report's flowchart of drifted.json (tests/test_report_pictures.py checks it is fresh).

Each PNG is cropped to the map, at one device pixel per CSS pixel, to stay small.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT

IMAGES = ROOT / "docs" / "images"
README = ROOT / "README.md"
AS_OF = ("--as-of", "2026-11-29")
EXAMPLES = {
    "exposure-map.png": ("tests/fixtures/clusters/drifted.json",),
    "exposure-map-channels.png": ("tests/fixtures/clusters/exposure.yaml", "--posture",
                                  "tests/fixtures/clusters/exposure-posture.yaml", "--exceptions",
                                  "tests/fixtures/clusters/exposure-exceptions.yaml"),
}
BLOCK = re.compile(r"(<!-- exposure-map:start[^\n]*-->\n)(.*?)(<!-- exposure-map:end -->)", re.S)


def _report(args: tuple[str, ...], fmt: str, out: Path) -> Path:
    from tests.test_live_fixtures import run

    done = run(*args, *AS_OF, f"--{fmt}", str(out), "--format", "json", cwd=ROOT)
    if done.code not in (0, 1):
        raise SystemExit(f"audit {' '.join(args)} failed: {done.stderr}")
    return out


def readme_block() -> str:
    """The Markdown report's Mermaid block of the README's example, fenced."""
    with tempfile.TemporaryDirectory() as folder:
        markdown = _report(EXAMPLES["exposure-map.png"], "markdown", Path(folder) / "audit.md").read_text("utf-8")
    return "```mermaid\n" + markdown.split("```mermaid\n", 1)[1].split("\n```\n", 1)[0] + "\n```\n"


def replace_readme_block(readme: str, block: str) -> str:
    if not BLOCK.search(readme):
        raise SystemExit("README.md has no <!-- exposure-map:start --> ... <!-- exposure-map:end --> block")
    return BLOCK.sub(lambda match: match.group(1) + block + match.group(3), readme, count=1)


def screenshot(html_page: Path, png: Path) -> tuple[int, int]:
    """The map of an HTML report, whole (the page's scroll box and width limit lifted), as a PNG."""
    from tests.browser import Chromium

    with Chromium.start() as browser:
        page = browser.page(width=1200)
        page.goto(html_page.as_uri())
        width = int(page.evaluate("document.querySelector('svg.exposure-map').width.baseVal.value"))
        page = browser.page(width=width + 48)
        page.goto(html_page.as_uri())
        page.evaluate("document.body.style.maxWidth = 'none';"
                      "document.querySelector('.map').style.overflow = 'visible'")
        page.screenshot(png, selector="svg.exposure-map", margin=0)
        box = page.box("svg.exposure-map")
    return int(box["width"]), int(box["height"])


def main() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for name, args in EXAMPLES.items():
            page = _report(args, "html", Path(folder) / f"{name}.html")
            width, height = screenshot(page, IMAGES / name)
            print(f"wrote docs/images/{name}: {width}x{height}, {(IMAGES / name).stat().st_size:,} bytes")
    readme = README.read_text(encoding="utf-8")
    README.write_text(replace_readme_block(readme, readme_block()), encoding="utf-8")
    print("wrote the Mermaid block of README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
