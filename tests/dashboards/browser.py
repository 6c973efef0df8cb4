"""Pages as a person's browser shows them: Debian's Chromium, headless.

``page()`` returns the DOM after the page's scripts ran (``--virtual-time-budget``
lets their fetches finish); ``screenshot()`` writes a PNG. Fails, never skips,
when Chromium is missing: ``scripts/install-system-deps`` installs it.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tests.dashboards.catalog import tool

BUDGET_MS = 10_000
TIMEOUT_SECONDS = 90


def _chromium(url: str, *args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        argv = [
            tool("chromium"),
            "--headless",
            "--no-sandbox",  # root, as CI runs
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={BUDGET_MS}",
            "--window-size=1400,1000",
            *args,
            url,
        ]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def page(url: str) -> str:
    """The DOM of ``url`` once its scripts have run."""
    return _chromium(url, "--dump-dom")


def screenshot(url: str, path: Path) -> Path:
    """A PNG of ``url`` as shown, at ``path``."""
    _chromium(url, f"--screenshot={path}")
    return path
