"""The report in a real browser: headless Chromium (Debian's package) driven by Playwright.

Checks that the page loads without console errors or network requests, that every figure is
drawn with a real size and real text, that the loop-nest sections expand, and saves a screenshot."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dnnmap.report.html.runs import Run, load_run

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[test]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# no background connections: this machine's network is closed, and the page needs none
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH: `apt-get install -y chromium` "
                                                         "(Debian) to run the browser test")


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.mark.parametrize("mode", ["single", "comparison"])
def test_report_in_chromium(browser: sync_api.Browser, pages: dict[str, str], run_files: tuple[Path, Path],
                            tmp_path: Path, mode: str) -> None:
    runs = [load_run(path) for path in run_files[:1 if mode == "single" else 2]]
    report = tmp_path / "report.html"
    report.write_text(pages[mode])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri(), wait_until="load")

    expected = 7 * len(runs) + (3 if mode == "comparison" else 0)  # latency, energy, DRAM changes
    figures = page.locator("figure.plot")
    assert figures.count() == expected
    for i in range(expected):
        svg = figures.nth(i).locator("svg")
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box()
        key = figures.nth(i).get_attribute("data-figure")
        assert box is not None and box["width"] > 200 and box["height"] > 100, (key, box)
        assert svg.locator("path, use").count() > 5, key  # drawn content, not an empty frame
        assert svg.locator("text").count() > 3 and svg.locator("text").first.text_content(), key  # real text

    details = page.locator("details.layer")
    assert details.count() == sum(len(run.layers) for run in runs)
    for i in range(details.count()):
        section = details.nth(i)
        nest = section.locator("pre.loop-nest")
        assert not nest.is_visible()
        section.locator("summary").click()
        assert section.evaluate("node => node.open")
        assert nest.is_visible() and "MAC  #" in nest.inner_text()

    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert errors == []
    assert requests == [report.as_uri()]  # self-contained: nothing fetched but the page itself
    page.close()


def column(page: sync_api.Page, table: str, header: str) -> list[str]:
    """The rendered text of one column of a table (found by its header) as the browser shows it."""
    return page.evaluate(
        """([table, header]) => {
            const t = document.querySelector(table);
            const i = [...t.querySelectorAll('thead th')].findIndex(th => th.innerText === header);
            return [...t.querySelectorAll('tbody tr')].map(tr => tr.children[i].innerText);
        }""", [table, header])


def test_latency_deltas_across_clocks(browser: sync_api.Browser, run_files: tuple[Path, Path], tpu_file: Path,
                                      tmp_path: Path) -> None:
    """Eyeriss (200 MHz) against the TPU-like preset (700 MHz): the deltas are of seconds, not cycles."""
    from dnnmap.report.html.report import build_report

    eyeriss, tpu = load_run(run_files[0]), load_run(tpu_file)
    assert (eyeriss.clock_mhz, tpu.clock_mhz) == (200, 700)
    report = tmp_path / "compare.html"
    report.write_text(build_report([eyeriss, tpu]))
    page = browser.new_page()
    page.goto(report.as_uri(), wait_until="load")

    def seconds(cycles: float, run: Run) -> float:
        return cycles / (run.clock_mhz * 1e6)

    total = (seconds(tpu.totals["cycles"], tpu) / seconds(eyeriss.totals["cycles"], eyeriss)) - 1
    by_cycles = tpu.totals["cycles"] / eyeriss.totals["cycles"] - 1
    assert f"{total:+.1%}" != f"{by_cycles:+.1%}"  # the clocks matter to the test
    summary = "#comparison-summary table"
    latency_deltas = page.evaluate(
        """(table) => [...document.querySelectorAll(table + ' tbody tr')].map(tr => {
               const heads = [...document.querySelectorAll(table + ' thead th')].map(th => th.innerText);
               return tr.children[heads.indexOf('latency (ms)') + 1].innerText; })""", summary)
    assert latency_deltas == ["+0.0%", f"{total:+.1%}"]
    assert column(page, summary, "clock (MHz)") == ["200", "700"]

    layers = {layer.name: layer for layer in tpu.layers}
    expected = [f"{seconds(layers[a.name].cycles, tpu) / seconds(a.cycles, eyeriss) - 1:+.1%}"
                for a in eyeriss.layers]
    assert column(page, "#comparison-layers table", "tpu latency Δ") == expected
    assert set(column(page, "#comparison-layers table", "tpu energy Δ")) == {"not compared"}
    assert "Energy is not compared" in page.locator("#comparison-layers").inner_text()
    page.close()
