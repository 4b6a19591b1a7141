"""The UI's pages in headless Chromium (Debian's chromium + chromium-driver, driven by selenium),
against the service as ``ushas serve`` runs it (waitress, Host check, Content-Security-Policy,
the /api/v1 REST API): the catalog browser, the table page and each inline edit, search with
facets, the lineage graph (dagre layout, zoom, column expansion, as-of), impact with CSV export,
runs and the run page, hostile names. One server and one browser for the module; every page
leaves a screenshot (in the module's tmp dir, or in ``$USHAS_UI_SCREENSHOTS`` when set)."""
from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from .uistore import RAW, REPORT, T1, T2, build, col, edge, run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the project's test extra) is not installed")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip("Debian's chromium and chromium-driver are not installed (./test installs them as root; "
                "a skip fails the run unless USHAS_ALLOW_SKIPS names this file)",
                allow_module_level=True)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from ushas_catalog.ui.server import Service  # noqa: E402

#: a name and a value that would run script if the page put data through innerHTML
XSS = '<img src=x onerror="window.__xss=1">'
XSS_TAG = "<i>t</i><script>alert(1)</script>"  # a tag may not hold "=" (search syntax)
#: a table and a column name every URL layer must keep in one segment (neither may hold "/", a
#: path separator; paths with "/" are lineage datasets: file:/data/report below)
HOSTILE = "q?x#y%2f.z w"
HOSTILE_COLUMN = "c#1%2f?"
SLASHED = "a/b"


def build_rich(uri: str) -> str:
    """uistore's store, plus: an owner, column descriptions and tags, a schema change (history),
    a table and a column named with ``? # %`` (and ``.`` and a space), one named like an XSS payload;
    returns a write token."""
    from lineage.model import EdgeSubtype
    from lineage.store import CapturedRun
    from lineage.tables import open_lineage_store
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.model.schema import parse_type
    from ushas_catalog.model.table_changes import AddColumn, SetOwner
    from ushas_catalog.service.tokens import TokenStore

    build(uri)
    # a run from raw straight to the report: an edge across two ranks, which must go round cleaned
    store = open_lineage_store(uri)
    try:
        store.record(CapturedRun(run(3, T2 + 60_000, "INSERT INTO report SELECT country FROM shop.sales.raw"),
                                 reads=(RAW,), writes=(REPORT,),
                                 edges=(edge(col(REPORT, "country"), col(RAW, "country"), EdgeSubtype.IDENTITY,
                                             "country"),)))
    finally:
        store.close()
    ms = Metastore.open(uri)
    try:
        ms.alter_table("shop.sales.raw", [AddColumn(("channel",), parse_type("STRING"), comment="web or store"),
                                          SetOwner("alice")])
        ms.metadata.tag("shop.sales.raw.amount", ["finance"])
        ms.create_table(["shop", "sales", HOSTILE], f"x INT, `{HOSTILE_COLUMN}` STRING", comment="a hostile name")
        # a table named a/b, as a store written before names were checked may hold one
        with pytest.MonkeyPatch.context() as mp:
            import ushas_catalog.catalog.tables as tables

            mp.setattr(tables, "new_table_name", tables.TableName.parse)
            ms.create_table(["shop", "sales", SLASHED], "s INT", comment="a slash in its name")
        ms.create_table(["shop", "sales", XSS], f"y STRING COMMENT '{XSS}'", comment=XSS)
        ms.metadata.tag(["shop", "sales", XSS], ["xss", XSS_TAG])
        _, secret = TokenStore(ms).create("write", "ui-test")
    finally:
        ms.close()
    return secret


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("USHAS_UI_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    uri = f"sqlite:///{tmp_path_factory.mktemp('store') / 'ushas.db'}"
    token = build_rich(uri)
    service = Service(uri, "default", host="127.0.0.1", port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{service.port}", "uri": uri, "token": token}
    service.stop()
    thread.join(30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("profile")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1440,950", "--lang=en-US", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console: CSP violations show there
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    driver.set_script_timeout(20)
    downloads = tmp_path_factory.mktemp("downloads")
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads  # where the CSV export lands
    yield driver
    driver.quit()


def wait_for(driver: Any, css: str, text: str | None = None) -> Any:
    wait = WebDriverWait(driver, 20)
    if text is not None:
        wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
    return wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def until(driver: Any, fn: Any) -> Any:
    return WebDriverWait(driver, 20).until(fn)


def go(b: Any, served: dict[str, Any], hash_: str) -> None:
    b.get(f"{served['url']}/#{hash_}")


def shot(b: Any, shots: Path, name: str) -> None:
    """Save a screenshot of the page, which shows no stray "null" / "undefined" / "NaN" text."""
    b.save_screenshot(str(shots / name))
    assert (shots / name).stat().st_size > 5_000
    stray = b.execute_script(r"""
      const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      while (walk.nextNode()) if (/^(null|undefined|NaN|\[object Object\])$/.test(walk.currentNode.data.trim())) out.push(walk.currentNode.parentNode.outerHTML.slice(0, 120));
      return out;""")
    assert stray == [], name


def no_console_errors(b: Any) -> None:
    bad = [e["message"] for e in b.get_log("browser")
           if e["level"] == "SEVERE" and "favicon" not in e["message"] and ".map" not in e["message"]
           and " 401 " not in e["message"] and " 403 " not in e["message"]]
    assert bad == []


def sign_in(b: Any, served: dict[str, Any]) -> None:
    if b.find_element(By.ID, "who").text.startswith("signed in"):
        return
    b.find_element(By.ID, "sign-in").click()
    b.find_element(By.ID, "token").send_keys(served["token"])
    b.find_element(By.ID, "sign-in-submit").click()
    wait_for(b, "#who", "signed in")


def api(served: dict[str, Any], path: str) -> Any:
    with urllib.request.urlopen(served["url"] + path, timeout=10) as r:
        return json.loads(r.read())


# ---- the catalog browser ---------------------------------------------------------------------------------
def test_browse_to_a_table_with_human_times_and_history(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/")
    wait_for(b, "#catalogs a", "shop")
    wait_for(b, "main", "Recent runs")  # the home page: catalogs, then what ran lately
    shot(b, shots, "home.png")
    b.find_element(By.CSS_SELECTOR, "#catalogs a").click()
    wait_for(b, "#databases a", "sales").click()
    wait_for(b, "#relations", "raw")
    shot(b, shots, "database.png")
    created = b.find_element(By.CSS_SELECTOR, "#relations time.when")
    assert created.text.endswith("ago") or created.text == "just now"
    assert created.get_attribute("title")[:4].isdigit()  # the exact time on hover
    b.find_element(By.LINK_TEXT, "raw").click()
    wait_for(b, "#columns", "channel")
    facts = b.find_element(By.ID, "facts")
    assert facts.find_elements(By.TAG_NAME, "thead") == []  # a key/value table has no (blank) header row
    assert "alice" in facts.text and "parquet" in facts.text
    assert "web or store" in b.find_element(By.ID, "columns").text
    assert "pii" in b.find_element(By.ID, "tags").text
    shot(b, shots, "table.png")

    b.find_element(By.ID, "tab-lineage").click()  # its neighbours, tables only
    wait_for(b, "#pane-lineage", "0 tables upstream, 2 downstream")
    wait_for(b, '#pane-lineage g.box[data-dataset="spark_catalog.default.cleaned"]')
    assert not b.find_elements(By.CSS_SELECTOR, "#pane-lineage g.col")
    shot(b, shots, "table-lineage.png")

    b.find_element(By.ID, "tab-partitions").click()
    wait_for(b, "#pane-partitions table", "dt=2024-01-01")
    b.find_element(By.ID, "next-partitions").click()
    wait_for(b, "#pane-partitions table", "dt=2024-01-21")

    b.find_element(By.ID, "tab-history").click()
    wait_for(b, "#history-list", "Add partitions")
    # the schema change reads as a diff against the version before, never as raw JSON
    until(b, lambda d: "column channel string" in d.find_element(By.ID, "history-list").text)
    history = b.find_element(By.ID, "history-list")
    assert history.find_elements(By.CSS_SELECTOR, "ul.diff li.add")
    assert "owner: root → alice" in history.text
    assert "{" not in history.text
    shot(b, shots, "history.png")

    # a view: its SQL, its columns
    go(b, served, "/d/shop/sales")
    wait_for(b, "#relations", "fr")
    b.find_element(By.LINK_TEXT, "fr").click()
    wait_for(b, ".page-head .kind-badge", "VIEW")
    b.find_element(By.ID, "tab-sql").click()
    wait_for(b, "#pane-sql pre.sql", "WHERE country = 'FR'")
    shot(b, shots, "view.png")

    with urllib.request.urlopen(served["url"] + "/favicon.ico", timeout=10) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("image/svg+xml")
    no_console_errors(b)

    # a mistyped table's URL: neither a table nor a view, said as such (issue 36; after the console check: the two 404s are logged)
    go(b, served, "/t/shop/sales/raww")
    wait_for(b, "main", "no table or view shop.sales.raww")
    assert "does not exist" not in b.find_element(By.TAG_NAME, "main").text
    shot(b, shots, "no-such-relation.png")
    b.get_log("browser")  # the two expected 404s: not the next test's console errors


def test_hostile_names_render_as_text(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/d/shop/sales")
    wait_for(b, "#relations", HOSTILE)
    b.find_element(By.LINK_TEXT, HOSTILE).click()
    wait_for(b, "#columns", HOSTILE_COLUMN)
    assert b.find_element(By.CSS_SELECTOR, ".page-head h1").text == f"shop.sales.`{HOSTILE}`"
    assert "a hostile name" in b.find_element(By.ID, "description").text
    go(b, served, "/d/shop/sales")
    wait_for(b, "#relations", SLASHED)
    b.find_element(By.LINK_TEXT, SLASHED).click()
    wait_for(b, "#columns", "s")
    assert b.find_element(By.CSS_SELECTOR, ".page-head h1").text == "shop.sales.`a/b`"
    assert "a slash in its name" in b.find_element(By.ID, "description").text
    b.find_element(By.ID, "tab-history").click()
    wait_for(b, "#history-list", "Create table")
    go(b, served, "/d/shop/sales")
    wait_for(b, "#relations", XSS)
    b.find_element(By.LINK_TEXT, XSS).click()
    wait_for(b, "#columns", "y")
    assert XSS in b.find_element(By.CSS_SELECTOR, ".page-head h1").text
    assert b.find_element(By.ID, "description").text.startswith(XSS)
    assert XSS in b.find_element(By.ID, "columns").text and XSS_TAG in b.find_element(By.ID, "tags").text
    assert b.find_elements(By.CSS_SELECTOR, "main script, main i") == []
    assert b.find_elements(By.CSS_SELECTOR, "main img") == []
    assert b.execute_script("return window.__xss === undefined")
    shot(b, shots, "hostile.png")
    go(b, served, "/search?q=tag:xss")
    wait_for(b, "#hits", XSS)
    assert b.find_elements(By.CSS_SELECTOR, "main img") == []
    b.find_element(By.CSS_SELECTOR, "#hits a.hit-name").click()  # the hit's link reaches its page
    wait_for(b, "#columns", "y")
    assert b.execute_script("return window.__xss === undefined")


# ---- inline edits ------------------------------------------------------------------------------------------
def test_edit_owner_description_and_tags(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/t/shop/sales/raw")
    wait_for(b, "#columns", "amount")
    pencil = b.find_element(By.CSS_SELECTOR, '[data-field="owner"] .pencil')
    assert not pencil.is_enabled()  # reads are open, writes need a write token
    sign_in(b, served)
    wait_for(b, "#columns", "amount")

    b.find_element(By.CSS_SELECTOR, '[data-field="owner"] .pencil').click()
    owner = b.find_element(By.CSS_SELECTOR, '[data-field="owner"] input')
    owner.clear()
    owner.send_keys("bob", Keys.ENTER)
    wait_for(b, '[data-field="owner"]', "saved")

    b.find_element(By.CSS_SELECTOR, '[data-field="description"] .pencil').click()
    desc = b.find_element(By.CSS_SELECTOR, '[data-field="description"] textarea')
    desc.send_keys("Raw card payments, one row per order <b>bold?</b>")
    b.find_element(By.CSS_SELECTOR, '[data-field="description"] button.save').click()
    wait_for(b, '[data-field="description"]', "saved")

    b.find_element(By.CSS_SELECTOR, '#tags .add-tag').click()
    b.find_element(By.CSS_SELECTOR, '#tags .tag-input').send_keys("gold, daily", Keys.ENTER)
    wait_for(b, '#tags', "gold")
    b.find_element(By.CSS_SELECTOR, '#tags [data-tag="pii"] .untag').click()
    until(b, lambda d: not d.find_elements(By.CSS_SELECTOR, '#tags [data-tag="pii"]'))

    col = '[data-field="description of country"]'
    b.find_element(By.CSS_SELECTOR, f"{col} .pencil").click()
    b.find_element(By.CSS_SELECTOR, f"{col} input").send_keys("ISO country code", Keys.ENTER)
    wait_for(b, col, "saved")
    ctags = '[data-field="tags of country"]'
    b.find_element(By.CSS_SELECTOR, f"{ctags} .add-tag").click()
    b.find_element(By.CSS_SELECTOR, f"{ctags} .tag-input").send_keys("geo", Keys.ENTER)
    wait_for(b, ctags, "geo")
    shot(b, shots, "edited.png")

    # what the service stored, read back through the API and after a reload of the page
    t = api(served, "/api/v1/catalogs/shop/databases/sales/tables/raw")
    assert t["owner"] == "bob" and t["comment"] == "Raw card payments, one row per order <b>bold?</b>"
    assert sorted(t["metadata"]["USER"]["tags"]) == ["daily", "gold"]
    country = next(f for f in t["schema"]["fields"] if f["name"] == "country")
    assert country["metadata"]["comment"] == "ISO country code"
    assert t["metadata"]["columns"]["country"]["USER"]["tags"] == ["geo"]
    b.refresh()
    wait_for(b, "#description", "one row per order <b>bold?</b>")
    assert "bob" in b.find_element(By.ID, "facts").text
    b.find_element(By.ID, "tab-history").click()
    wait_for(b, "#metadata-history", "gold")
    shot(b, shots, "metadata-history.png")

    # clear the description again: the placeholder comes back
    b.find_element(By.CSS_SELECTOR, '[data-field="description"] .pencil').click()
    b.find_element(By.CSS_SELECTOR, '[data-field="description"] textarea').clear()
    b.find_element(By.CSS_SELECTOR, '[data-field="description"] button.save').click()
    wait_for(b, '[data-field="description"]', "add a description")
    assert api(served, "/api/v1/catalogs/shop/databases/sales/tables/raw")["comment"] in (None, "")
    no_console_errors(b)


# ---- search ------------------------------------------------------------------------------------------------
def test_search_with_facets_and_highlights(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/")
    wait_for(b, "#catalogs")
    box = b.find_element(By.ID, "search")
    box.send_keys("amount", Keys.ENTER)
    wait_for(b, "#hit-count", "hit")
    hits = b.find_element(By.ID, "hits")
    assert "amount" in [m.text.lower() for m in hits.find_elements(By.TAG_NAME, "mark")]
    facets = b.find_element(By.ID, "facets")
    assert facets.find_elements(By.CSS_SELECTOR, 'fieldset[data-facet="kind"] input')
    shot(b, shots, "search.png")
    before = len(hits.find_elements(By.CSS_SELECTOR, "li.hit"))
    kinds = {i.get_attribute("value") for i in facets.find_elements(By.CSS_SELECTOR, 'fieldset[data-facet="kind"] input')}
    assert kinds == {"table", "view"} and before == 2  # shop.sales.raw and the view shop.sales.fr
    b.find_element(By.CSS_SELECTOR, 'input[data-facet-value="kind:view"]').click()
    until(b, lambda d: "kind=view" in d.current_url)
    until(b, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#hits li.hit")) == 1)
    hit = b.find_element(By.CSS_SELECTOR, "#hits li.hit")
    assert hit.get_attribute("data-name") == "shop.sales.fr" and hit.find_element(By.CSS_SELECTOR, ".kind").text == "view"
    assert b.find_element(By.CSS_SELECTOR, 'input[data-facet-value="kind:view"]').is_selected()
    # the owner facet (the view's owner: the table's is edited by another test)
    go(b, served, "/search?q=amount&owner=root")
    until(b, lambda d: [h.get_attribute("data-name") for h in d.find_elements(By.CSS_SELECTOR, "#hits li.hit")]
          == ["shop.sales.fr"])
    shot(b, shots, "search-facet.png")


# ---- lineage -----------------------------------------------------------------------------------------------
def boxes(b: Any) -> dict[str, dict[str, float]]:
    return b.execute_script("""
      const out = {};
      for (const g of document.querySelectorAll('#graph g.box')) {
        const r = g.querySelector('rect.frame').getBoundingClientRect();
        out[g.dataset.dataset] = {x: r.x, y: r.y, w: r.width, h: r.height};
      }
      return out;""")


def edges_through_boxes(b: Any) -> list[str]:
    """Edges that pass through a box other than their own ends' (sampled along each path)."""
    return b.execute_script("""
      const bad = [];
      const boxes = [...document.querySelectorAll('#graph g.box')].map(g => [g.dataset.dataset, g.querySelector('rect.frame').getBoundingClientRect()]);
      const ctm = document.querySelector('#graph g.world').getScreenCTM();
      for (const p of document.querySelectorAll('#graph path.gedge')) {
        const [t, s] = p.dataset.edge.split(' <- ');
        const len = p.getTotalLength();
        for (let i = 1; i < 40; i++) {
          const pt = p.getPointAtLength(len * i / 40).matrixTransform(ctm);
          for (const [name, r] of boxes) {
            if (t.startsWith(name) || s.startsWith(name)) continue;
            if (pt.x > r.left + 1 && pt.x < r.right - 1 && pt.y > r.top + 1 && pt.y < r.bottom - 1) bad.push(p.dataset.edge + ' in ' + name);
          }
        }
      }
      return [...new Set(bad)];""")


def test_lineage_graph(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/lineage")
    wait_for(b, "#datasets", "file:/data/report")
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in b.find_elements(By.CSS_SELECTOR, "#datasets tbody tr")}
    assert rows == {"file:/data/report": "path (parquet)", "shop.sales.raw": "table",
                    "spark_catalog.default.cleaned": "external table"}
    b.find_element(By.XPATH, "//tr[td//a[text()='shop.sales.raw']]//a[text()='table page']").click()
    wait_for(b, ".page-head h1", "shop.sales.raw")
    b.back()
    wait_for(b, "#datasets", "file:/data/report")
    Select(b.find_element(By.ID, "dataset-kind")).select_by_value("path")
    wait_for(b, "main .controls", "1 dataset")
    shot(b, shots, "datasets.png")

    go(b, served, "/lineage/shop.sales.raw?direction=downstream&depth=3")
    wait_for(b, '#graph g.box[data-dataset="file:/data/report"]')
    pos = boxes(b)
    raw, cleaned, report = pos["shop.sales.raw"], pos["spark_catalog.default.cleaned"], pos["file:/data/report"]
    assert raw["x"] + raw["w"] < cleaned["x"] and cleaned["x"] + cleaned["w"] < report["x"]  # layered left to right
    # the whole-dataset rows sit in their own table's box, at its level: cleaned's filter comes from raw
    whole = b.find_element(By.CSS_SELECTOR, 'g.box[data-dataset="spark_catalog.default.cleaned"] g.col.whole')
    assert whole.get_attribute("data-node") == "spark_catalog.default.cleaned"
    assert whole.rect["x"] > raw["x"] + raw["w"]
    kinds = {p.get_attribute("data-kind") for p in b.find_elements(By.CSS_SELECTOR, "path.gedge")}
    assert kinds == {"DIRECT", "INDIRECT"}
    assert edges_through_boxes(b) == []
    legend = b.find_element(By.CSS_SELECTOR, "#legend .legend-direct")
    assert legend.value_of_css_property("color") in ("rgba(47, 125, 50, 1)", "rgb(47, 125, 50)")
    shot(b, shots, "lineage.png")

    edge = b.find_element(By.CSS_SELECTOR,
                          'path.gedge[data-edge="spark_catalog.default.cleaned.amount <- shop.sales.raw.amount"]')
    # hover a point on the line (its middle), as a user does
    b.execute_script("""
      const p = arguments[0], pt = p.getPointAtLength(p.getTotalLength() / 2).matrixTransform(p.getScreenCTM());
      const hit = document.elementFromPoint(pt.x, pt.y);
      hit.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: pt.x, clientY: pt.y}));""", edge)
    tip = wait_for(b, "#tooltip", "TRANSFORMATION")
    assert "(amount * 100)" in tip.text
    b.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", edge.find_element(By.XPATH, ".."))
    wait_for(b, "#details #edge-runs a")

    # tables only: one edge per kind between boxes; a box click shows its columns again
    b.find_element(By.ID, "collapse-all").click()
    until(b, lambda d: not d.find_elements(By.CSS_SELECTOR, "g.box g.col"))
    assert edges_through_boxes(b) == []
    shot(b, shots, "lineage-tables.png")
    head = b.find_element(By.CSS_SELECTOR, 'g.box[data-dataset="spark_catalog.default.cleaned"] g.head')
    b.execute_script("arguments[0].focus()", head)  # from the keyboard: Enter opens the box
    ActionChains(b).send_keys(Keys.ENTER).perform()
    wait_for(b, 'g.col[data-node="spark_catalog.default.cleaned.amount"]')
    assert "spark_catalog.default.cleaned" in b.find_element(By.ID, "details").text

    # at 1280x720, fitted: every text of the graph is at least 11 px on screen, and the graph fills the
    # area it uses (issue 36: 7-8 px labels with most of the canvas empty)
    b.set_window_size(1280, 720)
    try:
        b.find_element(By.ID, "zoom-fit").click()
        sizes = b.execute_script("""
          return [...document.querySelectorAll('#graph svg text')].filter((t) => t.getBBox().width > 0)
            .map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);""")
        assert sizes and min(sizes) >= 11 - 0.01, sorted(sizes)[:5]
        shot(b, shots, "lineage-1280x720.png")
    finally:
        b.set_window_size(1440, 950)

    # zoom and pan change the view's transform
    world = b.find_element(By.CSS_SELECTOR, "#graph g.world")
    before = world.get_attribute("transform")
    b.find_element(By.ID, "zoom-in").click()
    assert world.get_attribute("transform") != before
    ActionChains(b).move_to_element_with_offset(b.find_element(By.CSS_SELECTOR, "#graph svg"), 5, 5) \
        .click_and_hold().move_by_offset(60, 40).release().perform()
    assert "translate" in world.get_attribute("transform")
    no_console_errors(b)


def _twenty_datasets(uri: str) -> str:
    """A lineage of 20 datasets around one hub: 10 sources -> 5 middles -> the hub -> 4 outputs; the hub's name."""
    from lineage.model import Dataset, EdgeSubtype
    from lineage.store import CapturedRun
    from lineage.tables import open_lineage_store

    def ds(name: str) -> Dataset:
        return Dataset.table("spark_catalog", "wide", name)

    sources, middles = [ds(f"source_{i:02d}") for i in range(10)], [ds(f"middle_{j}") for j in range(5)]
    hub, outputs = ds("hub"), [ds(f"output_{k}") for k in range(4)]
    store = open_lineage_store(uri)
    try:
        n = 0
        for j, middle in enumerate(middles):
            n += 1
            ins = sources[2 * j:2 * j + 2]
            store.record(CapturedRun(run(n, T1 + n, f"INSERT INTO middle_{j} ..."), reads=tuple(ins), writes=(middle,),
                                     edges=tuple(edge(col(middle, "value"), col(s, "value"), EdgeSubtype.AGGREGATION,
                                                      "sum(value)") for s in ins)))
        n += 1
        store.record(CapturedRun(run(n, T1 + n, "INSERT INTO hub ..."), reads=tuple(middles), writes=(hub,),
                                 edges=tuple(edge(col(hub, f"value_{j}"), col(m, "value"), EdgeSubtype.IDENTITY, "value")
                                             for j, m in enumerate(middles))))
        for k, out in enumerate(outputs):
            n += 1
            store.record(CapturedRun(run(n, T1 + n, f"INSERT INTO output_{k} ..."), reads=(hub,), writes=(out,),
                                     edges=(edge(col(out, "total"), col(hub, f"value_{k}"), EdgeSubtype.TRANSFORMATION,
                                                 f"value_{k} * 2"),)))
    finally:
        store.close()
    return hub.name


def test_a_twenty_dataset_graph_stays_readable_at_1280x720(browser: Any, shots: Path,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """Issue 36: with 20 datasets at 1280x720, fitted, every text of the graph is at least 11 px on screen and
    the graph fills the window's graph area (a graph too big for it at 11 px opens at its top left and pans)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('wide') / 'ushas.db'}"
    hub = _twenty_datasets(uri)
    service = Service(uri, "default", host="127.0.0.1", port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    b = browser
    b.set_window_size(1280, 720)
    try:
        go(b, {"url": f"http://127.0.0.1:{service.port}"}, f"/lineage/{hub}?direction=both&depth=3")
        wait_for(b, '#graph g.box[data-dataset="spark_catalog.wide.output_3"]')
        until(b, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#graph g.box")) == 20)
        b.find_element(By.ID, "zoom-fit").click()
        sizes = b.execute_script("""
          return [...document.querySelectorAll('#graph svg text')].filter((t) => t.getBBox().width > 0)
            .map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);""")
        assert len(sizes) >= 40 and min(sizes) >= 11 - 0.01, sorted(sizes)[:5]
        used = b.execute_script("""
          const s = document.querySelector('#graph svg').getBoundingClientRect();
          const g = document.querySelector('#graph g.world').getBoundingClientRect();
          const w = Math.max(0, Math.min(s.right, g.right) - Math.max(s.left, g.left));
          const h = Math.max(0, Math.min(s.bottom, g.bottom) - Math.max(s.top, g.top));
          return [w / s.width, h / s.height];""")
        assert min(used) > 0.6, used  # the graph, not empty canvas, fills the view
        assert edges_through_boxes(b) == []
        shot(b, shots, "lineage-20-datasets-1280x720.png")
        no_console_errors(b)
    finally:
        b.set_window_size(1440, 950)
        service.stop()
        thread.join(30)


def test_lineage_of_a_column_expands_and_goes_back_in_time(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/lineage/file%3A%2Fdata%2Freport.total?direction=upstream&depth=1")
    wait_for(b, "#graph-info", "more beyond this depth")
    nodes = {n.get_attribute("data-node") for n in b.find_elements(By.CSS_SELECTOR, "g.col")}
    assert {"file:/data/report.total", "spark_catalog.default.cleaned.amount"} <= nodes
    assert "shop.sales.raw.amount" not in nodes
    assert "file:/data/report.total" in b.find_element(By.ID, "details").text  # the start column is selected
    # double-click the edge-most column: one more level of lineage from it
    col = b.find_element(By.CSS_SELECTOR, 'g.col[data-node="spark_catalog.default.cleaned.amount"]')
    ActionChains(b).double_click(col).perform()
    until(b, lambda d: d.find_elements(By.CSS_SELECTOR, 'g.col[data-node="shop.sales.raw.amount"]'))
    assert edges_through_boxes(b) == []
    shot(b, shots, "lineage-expanded.png")

    # as of a time between the two runs: the report did not exist yet
    between = (T1 + T2) // 2
    local = b.execute_script(
        "const d = new Date(arguments[0]); const p = n => String(n).padStart(2, '0');"
        "return `${d.getFullYear()}-${p(d.getMonth()+1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;", between)
    go(b, served, f"/lineage/shop.sales.raw?direction=downstream&depth=3&asof={local}")
    wait_for(b, '#graph g.box[data-dataset="spark_catalog.default.cleaned"]')
    wait_for(b, "#graph-info", "as of")
    assert not b.find_elements(By.CSS_SELECTOR, 'g.box[data-dataset="file:/data/report"]')
    shot(b, shots, "lineage-asof.png")


def test_impact_with_owners_and_csv(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, f"/impact/{RAW.name}.amount".replace("/impact/", "/impact/"))
    wait_for(b, "#impact", "file:/data/report.total")
    text = b.find_element(By.ID, "impact").text
    assert "spark_catalog.default.cleaned.amount" in text
    assert "downstream column" in b.find_element(By.ID, "impact-summary").text
    # each row's path shows every hop with its kind, from the column to the row (issue 36)
    row = next(r for r in b.find_elements(By.CSS_SELECTOR, "#impact tr") if "file:/data/report.total" in r.text)
    assert f"{RAW.name}.amount —" in row.text and "—AGGREGATION→" in row.text, row.text
    shot(b, shots, "impact.png")
    b.find_element(By.ID, "export-csv").click()  # a real download, under the page's CSP
    target = b.downloads / "impact-shop.sales.raw.amount.csv"
    until(b, lambda d: target.exists() and target.stat().st_size > 0)
    lines = target.read_text().strip().split("\n")
    assert lines[0] == "column,dataset,depth,owner,tags,path"
    assert any(line.startswith("file:/data/report.total,file:/data/report,2,") for line in lines)


def test_runs_and_the_run_page(served: dict[str, Any], browser: Any, shots: Path) -> None:
    b = browser
    go(b, served, "/runs?dataset=file%3A%2Fdata%2Freport")
    wait_for(b, "main table.runs", "sum(amount)")
    shot(b, shots, "runs.png")
    b.find_element(By.XPATH, "//table[contains(@class, 'runs')]//tr[td/code[contains(., 'sum(amount)')]]//a").click()
    wait_for(b, "#run-sql", "SELECT country, sum(amount) AS total FROM cleaned GROUP BY country")
    assert "spark_catalog.default.cleaned" in b.find_element(By.ID, "inputs").text
    assert "file:/data/report" in b.find_element(By.ID, "outputs").text
    facts = b.find_element(By.ID, "run-facts").text
    assert "complete" in facts and "500 ms" in b.find_element(By.ID, "duration").text
    edges = b.find_element(By.ID, "run-edges").text
    assert "sum(amount)" in edges and "aggregation" in edges
    wait_for(b, '#graph g.box[data-dataset="file:/data/report"]')
    shot(b, shots, "run.png")
    no_console_errors(b)


def _network_address() -> str | None:
    """This machine's address on a network (not loopback), if it has one."""
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_a_service_on_the_network_asks_for_a_token(served: dict[str, Any], browser: Any, shots: Path) -> None:
    """Bound beyond loopback, reads need a token too: the page says so, a read token signs in and
    shows the catalog read-only (no edits)."""
    from ushas_catalog.metastore import Metastore
    from ushas_catalog.service.tokens import TokenStore

    address = _network_address()
    if address is None:
        pytest.skip("no network address to bind to")
    ms = Metastore.open(served["uri"])
    try:
        _, reader = TokenStore(ms).create("read", "ui-reader")
    finally:
        ms.close()
    service = Service(served["uri"], "default", host=address, port=0)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    b = browser
    try:
        b.get(f"http://{address}:{service.port}/#/t/shop/sales/raw")
        wait_for(b, "#needs-token", "needs a token")
        shot(b, shots, "needs-token.png")
        b.find_element(By.CSS_SELECTOR, "#needs-token button").click()
        b.find_element(By.ID, "token").send_keys(reader)
        b.find_element(By.ID, "sign-in-submit").click()
        wait_for(b, "#columns", "amount")
        assert b.find_element(By.ID, "who").text == "read-only"
        assert not b.find_element(By.CSS_SELECTOR, '[data-field="owner"] .pencil').is_enabled()
        assert not b.find_element(By.CSS_SELECTOR, '#tags .add-tag').is_enabled()
    finally:
        service.stop()
        thread.join(30)
