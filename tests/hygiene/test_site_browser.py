"""The docs site as a person sees it: every page opened in a real headless browser.

The site is built (``mkdocs build --strict``) into a temporary directory and served on
loopback; Debian's chromium (installed by ``make test``, tools/test_packages.sh) opens every
page. A page passes when chromium renders it (its ``<h1>`` is in the DOM), its console
stays silent (chromium logs each console message as a ``CONSOLE`` line), and every
resource it asked the server for was there (no 4xx/5xx). Screenshots of the quickstart
and of a lineage SVG drawn by ``odfweb3 lineage --format svg`` are written to
``test-artifacts/`` (or ``$ODFWEB3_TEST_ARTIFACTS``), never committed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from odfweb3.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("ODFWEB3_TEST_ARTIFACTS", ROOT / "test-artifacts"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _chromium() -> str:
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: run make test (tools/test_packages.sh installs it)"
    return exe


def _run_chromium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _chromium(),
            "--headless=new",
            "--no-sandbox",  # root in CI; the pages are our own
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class _Server:
    """The built site on loopback, remembering every request and its status."""

    def __init__(self, root: Path) -> None:
        self.requests: list[tuple[str, int]] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                server.requests.append((self.path, int(code) if str(code).isdigit() else 0))

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
        )
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[tuple[Path, _Server]]:
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    server = _Server(out)
    try:
        yield out, server
    finally:
        server.close()


def test_the_console_check_sees_errors(tmp_path):
    # The check below is only worth something if a broken page does fail it.
    page = tmp_path / "broken.html"
    page.write_text("<h1>x</h1><script>console.error('boom'); notDefined();</script>")
    r = _run_chromium("--dump-dom", page.as_uri())
    lines = _console(r.stderr)
    assert any("boom" in line for line in lines)
    assert any("Uncaught ReferenceError" in line for line in lines)


def test_every_page_renders_without_console_errors_or_missing_resources(site):
    root, server = site
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    pages = [p for p in pages if p != "404.html"]
    assert "quickstart.html" in pages and "cli.html" in pages and len(pages) >= 10
    for page in pages:
        server.requests.clear()
        r = _run_chromium("--dump-dom", f"{server.url}/{page}")
        assert r.returncode == 0, (page, r.stderr[-2000:])
        assert "<h1" in r.stdout, f"{page}: nothing rendered"
        assert _console(r.stderr) == [], (page, _console(r.stderr))
        failed = [(path, code) for path, code in server.requests if code >= 400]
        assert failed == [], (page, failed)
        assert (f"/{page}", 200) in server.requests


def _screenshot(url: str, name: str, size: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    r = _run_chromium(f"--screenshot={shot}", f"--window-size={size}", url)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == PNG_MAGIC
    return shot


def test_screenshots_of_the_quickstart_and_a_lineage_svg(site, tmp_path, monkeypatch, capsys):
    _, server = site
    shot = _screenshot(f"{server.url}/quickstart.html", "quickstart.png", "1280,1800")
    assert shot.stat().st_size > 20_000  # a rendered page, not an empty canvas

    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path / "home")}
    for argv in (
        ["example", "a", "--blocks", "1", "-q"],
        ["example", "b", "--blocks", "1", "-q"],
        ["example", "d", "--derivative-of", "a", "b", "--blocks", "1", "-q"],
        ["lineage", "d", "--inputs", "a", "b", "--format", "svg", "-o", "lineage.svg", "-q"],
    ):
        assert main(argv, env=env) == 0, capsys.readouterr().err
    svg = tmp_path / "lineage.svg"
    r = _run_chromium("--dump-dom", svg.as_uri())
    assert r.returncode == 0 and _console(r.stderr) == []
    assert "odfweb3 lineage" in r.stdout and "<line" in r.stdout
    shot = _screenshot(svg.as_uri(), "lineage.png", "800,600")
    assert shot.stat().st_size > 5_000
