"""The dashboard screenshots of the docs: `shadow demo`'s page in Debian's chromium, driven by Playwright.

``python3 tests/docs/_screenshots.py docs/assets/screenshots`` refreshes the committed copies (what ``mkdocs serve``
shows); the test run takes its own into the copy of the docs it builds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("dashboard-top.png", "dashboard-charts.png")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


def take(out: Path, chromium: str) -> list[Path]:
    """Run the demo in a temporary directory, open its dashboard offline and write the screenshots into ``out``."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SHADOW_FINGERPRINT_KEY": "docs-screenshots"}
        subprocess.run([sys.executable, "-m", "shadow", "demo", "--dir", f"{tmp}/demo", "--sessions", "400"],
                       env=env, check=True, capture_output=True, timeout=300)
        page_file = Path(tmp) / "demo" / "cutover.html"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else route.abort())
            page.goto(page_file.as_uri())
            page.wait_for_selector("#chart-loop_rate .main-svg")
            page.screenshot(path=str(out / NAMES[0]))
            chart = page.locator("#chart-loop_rate")
            chart.scroll_into_view_if_needed()
            chart.screenshot(path=str(out / NAMES[1]))
            browser.close()
    return [out / name for name in NAMES]


if __name__ == "__main__":
    import shutil

    found = shutil.which("chromium")
    if found is None:
        sys.exit("chromium is not installed (apt-get install -y chromium)")
    for path in take(Path(sys.argv[1]), found):
        print(path)
