"""The report's interactive figures (analysis/report_view.py) in a headless Chromium with no network: the page
loads, every figure with a table gets its chart with its data, and no script fails."""
import csv
import os
import shutil
import time

import pytest

from analysis import report, report_view

# a 1x1 PNG: the report embeds whatever figures/ holds, the view draws from the CSV beside it
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


def write_figures(fdir):
    """Three figures of a non-Table-1 scenario: a load figure (4 AQMs x 2 loads), a CDF, a table-less one."""
    os.makedirs(fdir)
    aqms = ["droptail", "favor", "choke", "fq_codel"]
    with open(os.path.join(fdir, "B1.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scen", "aqm", "load", "mean", "lo", "hi", "n", "flows", "runs", "realized_load", "aqm_name"])
        for i, a in enumerate(aqms):
            for load in (0.5, 0.9):
                w.writerow(["dumbbell buf 20 iw 10", a, load, 0.5 + i / 10 + load, 0.4, 0.6, 3, 36, 3, load, a])
    with open(os.path.join(fdir, "B6.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scen", "aqm", "load", "cdf", "latency_s", "flows", "runs", "aqm_name"])
        for a in aqms:
            for load in (0.5, 0.9):
                for p in range(101):
                    w.writerow(["s", a, load, p / 100, 0.1 + p / 50, 36, 3, a])
    for stem in ("B1", "B6", "F6"):
        with open(os.path.join(fdir, stem + ".png"), "wb") as f:
            f.write(PNG)


def test_chart_spec_draws_one_series_per_aqm_and_load_on_the_figures_axes():
    rows = [{"scen": "s", "aqm": "favor", "aqm_name": "FaQ", "load": "0.5", "cdf": "0.5", "latency_s": "1.2", "flows": "9"},
            {"scen": "s", "aqm": "droptail", "aqm_name": "DropTail", "load": "0.9", "cdf": "0.5", "latency_s": "2", "flows": "9"}]
    spec = report_view.chart_spec(rows)
    assert (spec["x"], spec["y"]) == ("latency_s", "cdf")
    assert [s["name"] for s in spec["series"]] == ["FaQ | load 0.5", "DropTail | load 0.9"]
    assert report_view.chart_spec([{"aqm": "favor", "note": "x"}]) is None


def test_without_the_charting_library_the_report_is_written_and_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(report_view, "ECHARTS", str(tmp_path / "absent" / "echarts.min.js"))
    write_figures(str(tmp_path / "figures"))
    page = report.render(str(tmp_path))
    assert "Interactive figures missing" in page and "run scripts/bootstrap" in page
    assert page.count("class='fig-view'") == 2


def test_report_page_draws_every_figure_table_offline_in_a_headless_browser(tmp_path):
    if not os.path.isfile(report_view.ECHARTS):
        pytest.skip("ECharts not installed (analysis/view/node_modules); runs where scripts/bootstrap ran npm ci")
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.skip("no chromium/chromedriver (analysis/view/apt-packages.txt); runs where scripts/bootstrap installed them (not in the frozen images)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (analysis/view/requirements.txt) not installed; runs where scripts/bootstrap installed it (not in the frozen images)")
    write_figures(str(tmp_path / "figures"))
    page = tmp_path / "report.html"
    page.write_text(report.render(str(tmp_path)))
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    # no network at all: every name resolves nowhere and every request goes to a closed port
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver_bin))
    try:
        driver.set_page_load_timeout(30)
        driver.get(page.as_uri())
        deadline = time.monotonic() + 20
        while driver.execute_script("return window.favorlabViewRendered === undefined") and time.monotonic() < deadline:
            time.sleep(0.2)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        assert driver.execute_script("return window.favorlabViewRendered") == 2       # B1 and B6; F6 has no table
        series = driver.execute_script(
            "return Array.from(document.querySelectorAll('div.fig-view')).map(d => [d.dataset.figure, d.dataset.rendered,"
            " echarts.getInstanceByDom(d).getOption().series.map(s => [s.name, s.data.length])])")
        by_fig = {fig: (rendered, dict(map(tuple, s))) for fig, rendered, s in series}
        assert set(by_fig) == {"B1", "B6"} and all(r == "1" for r, _ in by_fig.values())
        assert by_fig["B1"][1] == {a: 2 for a in ("droptail", "favor", "choke", "fq_codel")}      # every AQM at both loads
        assert len(by_fig["B6"][1]) == 8 and set(by_fig["B6"][1].values()) == {101}
        assert "no table beside this figure" in driver.page_source
    finally:
        driver.quit()
