"""The UI's pages in headless Chromium (Debian's chromium + chromium-driver, driven by selenium):
browse to a table, page its partitions, search, open the lineage graph, expand a node, hover an
edge. Screenshots go to the test's tmp dir. The server listens on loopback only."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from .uistore import build

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the project's test extra) is not installed")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip("Debian's chromium and chromium-driver are not installed (./test installs them as root)",
                allow_module_level=True)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from ushas_catalog.ui.server import Service  # noqa: E402


@pytest.fixture
def server(store_uri: str):
    """The service as ``ushas ui`` runs it (waitress, Host check, Content-Security-Policy)."""
    build(store_uri)
    service = Service(store_uri, "default", host="127.0.0.1", port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{service.port}"
    service.stop()
    thread.join(30)


@pytest.fixture
def browser(tmp_path: Path):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,900", f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console: CSP violations show there
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def wait_for(driver, css: str, text: str | None = None):
    wait = WebDriverWait(driver, 30)
    if text is not None:
        wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
    return wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_browse_search_and_lineage(server: str, browser, tmp_path: Path) -> None:
    b = browser
    b.get(server + "/")
    wait_for(b, "main table a", "shop").click()
    wait_for(b, "main table a", "sales").click()
    wait_for(b, "main h2", "Database shop.sales")
    b.find_element(By.LINK_TEXT, "raw").click()
    wait_for(b, "#partitions table", "dt=2024-01-01")
    assert "pii" in b.find_element(By.ID, "tags").text
    assert "payments" in b.find_element(By.TAG_NAME, "main").text
    wait_for(b, "#history table", "ADD PARTITIONS")
    b.save_screenshot(str(tmp_path / "table.png"))
    b.find_element(By.ID, "next-partitions").click()
    wait_for(b, "#partitions table", "dt=2024-01-21")
    assert "dt=2024-01-01" not in b.find_element(By.ID, "partitions").text

    search = b.find_element(By.ID, "search")
    search.send_keys("tag:pii")
    b.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait_for(b, "main", "discovery index")
    assert "shop.sales.raw" in b.find_element(By.TAG_NAME, "main").text
    b.save_screenshot(str(tmp_path / "search.png"))

    # every captured dataset, lineage-only ones included: a path and a session-catalog table
    b.find_element(By.LINK_TEXT, "Lineage").click()
    wait_for(b, "main table", "file:/data/report")
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in b.find_elements(By.CSS_SELECTOR, "main table tr") if r.find_elements(By.TAG_NAME, "td")}
    assert rows == {"file:/data/report": "path (parquet)", "shop.sales.raw": "table",
                    "spark_catalog.default.cleaned": "external table"}
    b.save_screenshot(str(tmp_path / "datasets.png"))
    Select(b.find_element(By.ID, "dataset-kind")).select_by_value("path")
    wait_for(b, "main .controls", "1 dataset")
    assert "spark_catalog.default.cleaned" not in b.find_element(By.TAG_NAME, "main").text
    b.find_element(By.XPATH, "//main//tr[td//a[text()='file:/data/report']]//a[text()='runs']").click()
    wait_for(b, "main h2", "Runs of file:/data/report")
    assert "sum(amount)" in b.find_element(By.CSS_SELECTOR, "main table").text
    b.find_element(By.CSS_SELECTOR, "#crumbs a[href='#/lineage/file%3A%2Fdata%2Freport']").click()
    wait_for(b, "#graph svg")
    nodes = {n.get_attribute("data-node") for n in b.find_elements(By.CSS_SELECTOR, "g.gnode")}
    assert {"file:/data/report.total", "spark_catalog.default.cleaned.amount", "shop.sales.raw.amount"} <= nodes
    b.save_screenshot(str(tmp_path / "path-lineage.png"))

    b.get(server + "/#/lineage/file%3A%2Fdata%2Freport.total?direction=upstream&depth=1")
    wait_for(b, "#graph-info", "more beyond this depth")
    nodes = {n.get_attribute("data-node") for n in b.find_elements(By.CSS_SELECTOR, "g.gnode")}
    assert {"file:/data/report.total", "spark_catalog.default.cleaned.amount"} <= nodes
    assert "shop.sales.raw.amount" not in nodes

    # click the edge-most upstream column: it expands one more level
    b.find_element(By.CSS_SELECTOR, 'g.gnode[data-node="spark_catalog.default.cleaned.amount"]').click()
    WebDriverWait(b, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, 'g.gnode[data-node="shop.sales.raw.amount"]'))

    edge = b.find_element(By.CSS_SELECTOR,
                          'path.gedge[data-edge="spark_catalog.default.cleaned.amount <- shop.sales.raw.amount"]')
    ActionChains(b).move_to_element(edge).perform()
    tip = wait_for(b, "#tooltip", "TRANSFORMATION")
    assert "(amount * 100)" in tip.text
    b.save_screenshot(str(tmp_path / "lineage.png"))

    # depth control: depth 2 reaches raw without expanding
    depth = b.find_element(By.ID, "depth")
    depth.clear()
    depth.send_keys("2")
    b.find_element(By.ID, "apply").click()
    WebDriverWait(b, 30).until(lambda d: "depth=2" in d.current_url and d.find_elements(
        By.CSS_SELECTOR, 'g.gnode[data-node="shop.sales.raw.amount"]'))
    for shot in ("table.png", "search.png", "datasets.png", "path-lineage.png", "lineage.png"):
        assert (tmp_path / shot).stat().st_size > 5_000

    # the page works under the service's Content-Security-Policy: its style sheet applies (the
    # legend's colours, once inline styles), nothing was blocked, the header names no file path
    legend = b.find_element(By.CSS_SELECTOR, ".legend .legend-direct")
    assert legend.value_of_css_property("color") in ("rgba(47, 125, 50, 1)", "rgb(47, 125, 50)")
    assert b.find_element(By.ID, "store").text == "sqlite store · project default"
    blocked = [e["message"] for e in b.get_log("browser") if "Content Security Policy" in e["message"]]
    assert blocked == []
