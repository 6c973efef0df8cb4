"""The HTML report in a real browser: Debian's headless Chromium, no network."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from otel_compaction.config import Settings
from otel_compaction.report import analyze_files
from otel_compaction.report.html import render_html
from otel_compaction.report.parts import FLAG_COLOR, LINE_COLOR
from tests.report.png import read_png
from tests.transcripts import TESTDATA

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="needs Debian's chromium (scripts/install-system-deps)"
    ),
]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=10000",
]
WIDTH, HEIGHT = 1200, 1400


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of the livelock transcript and its reset twin, on disk."""
    report = analyze_files(
        [TESTDATA / "claude_livelock.jsonl", TESTDATA / "claude_reset.jsonl"], Settings()
    )
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(report, settings=Settings()), encoding="utf-8")
    return path


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_page_renders_every_chart_without_console_errors(page: Path, tmp_path: Path) -> None:
    """After the scripts ran, each chart is a drawn plotly graph and the console stayed silent."""
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    graphs = re.findall(r'<div id="conversation-chart-\d+" class="[^"]*js-plotly-plot', done.stdout)
    assert len(graphs) == 2
    assert done.stdout.count('class="main-svg"') >= 4


def _near(image: np.ndarray, hex_color: str, tolerance: int = 40) -> int:
    rgb = np.array([int(hex_color[i : i + 2], 16) for i in (1, 3, 5)])
    distance = np.abs(image[:, :, :3].astype(int) - rgb).sum(axis=2)
    return int((distance <= tolerance).sum())


def test_screenshot_shows_the_timeline(page: Path, tmp_path: Path) -> None:
    """The screenshot has the timeline's blue line and the red flagged compactions."""
    shot = tmp_path / "shot.png"
    done = _chromium(
        page, tmp_path / "profile", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    image = read_png(shot)
    assert image.shape[:2] == (HEIGHT, WIDTH)
    not_white = int((image[:, :, :3].min(axis=2) < 235).sum())
    assert not_white > 0.05 * WIDTH * HEIGHT
    assert _near(image, LINE_COLOR) > 2_000  # the token-fraction line and interval bars
    assert _near(image, FLAG_COLOR) > 500  # flagged compactions stand out in red


PROBE = """<script>
var gd = document.getElementById('conversation-chart-0');
var star = gd.data.findIndex(function (t) { return t.name === 'flagged compaction'; });
var point = gd.querySelectorAll('.scatterlayer .trace')[star].querySelector('path.point');
var drawn = point.getAttribute('transform').match(/translate\\(([-\\d.]+),/)[1];
var probe = {
  x: gd.data[star].x,
  drawn: parseFloat(drawn),
  turn30: gd._fullLayout.xaxis.d2p(30),
  turn29: gd._fullLayout.xaxis.d2p(29),
  titles: gd.layout.annotations.map(function (a) { return a.text; }),
  legend: document.getElementById('legend') !== null,
};
var out = document.createElement('pre');
out.id = 'probe-result';
out.textContent = JSON.stringify(probe);
document.body.appendChild(out);
</script>"""


def test_one_compaction_page_draws_the_star_at_turn_30_and_no_empty_panel(tmp_path: Path) -> None:
    """In Chromium, the flagged star is drawn at turn 30's pixel, with no interval panel."""
    import json

    from tests.report.one_compaction import one_compaction_report

    html = render_html(one_compaction_report(), settings=Settings())
    page = tmp_path / "one.html"
    page.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe-result">(.*?)</pre>', done.stdout)
    assert found is not None, done.stderr[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    assert probe["x"] == [30]
    step = probe["turn30"] - probe["turn29"]
    assert abs(probe["drawn"] - probe["turn30"]) < 0.25 * step
    assert not [
        t for t in probe["titles"] if t.startswith(("compaction interval", "compaction lineage"))
    ]
    assert probe["legend"] is True
