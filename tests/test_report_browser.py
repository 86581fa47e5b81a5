"""The report page in headless Chromium at a phone's, a tablet's and a desktop's width (390, 768,
1280 px): the page never scrolls sideways (a wide table scrolls in its own box), no text of the
page overlaps another or is clipped, every figure shown fits the page and its text is at least
9 px, no number is split from its unit (or a date across lines), and a screenshot is not blank.
The checks run from a harness page that loads the report in an iframe, so the report itself
carries no test aid. Pages built to fail show that each check can fail.

Skipped when Chromium is not installed (.ci/run installs it: apt-get install -y chromium).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from analyzer import report
from conftest import need
from report_checks import cli

SMALL = need("lichess_small.pgn")
EDGE = need("edge_cases.pgn")
DRAUGHTS = need("draughts/russian_gametype25.pdn")
WIDTHS = (390, 768, 1280)
MIN_FIGURE_TEXT_PX = 9.0


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROME = _chromium()
pytestmark = pytest.mark.skipif(
    CHROME is None, reason="chromium not installed (.ci/run installs it: apt-get install -y chromium)"
)

CHECK_JS = r"""
function visible(el, win) {
  for (var a = el; a && a.nodeType === 1; a = a.parentElement)
    if (win.getComputedStyle(a).display === 'none') return false;
  return true;
}
function scrolls(cs) { return cs.overflowX === 'auto' || cs.overflowX === 'scroll'; }
function check(doc, win) {
  var res = {width: doc.documentElement.scrollWidth, overflowX: doc.documentElement.scrollWidth - win.innerWidth,
             clipped: [], overlaps: [], split: [], smallText: [], svgs: 0, texts: 0, minSvgTextPx: null};
  var walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT), n, items = [];
  var unit = /\d[\d,.]*(?:–\d[\d,.]*)?[ \u00a0]%|\b\d{4}-\d{2}(?:-\d{2})?\b/g;
  while ((n = walker.nextNode())) {
    if (!n.textContent.trim() || n.parentElement.closest('svg')) continue;   // figures: checked below
    if (!visible(n.parentElement, win)) continue;
    var range = doc.createRange(); range.selectNodeContents(n);
    var rects = range.getClientRects();
    for (var i = 0; i < rects.length; i++) {
      var r = rects[i];
      if (r.width < 0.5 || r.height < 0.5) continue;
      items.push({r: r, el: n.parentElement, text: n.textContent.trim().slice(0, 60)});
    }
    var m, t = n.textContent;
    unit.lastIndex = 0;
    while ((m = unit.exec(t))) {
      var rr = doc.createRange(); rr.setStart(n, m.index); rr.setEnd(n, m.index + m[0].length);
      var tops = {};
      Array.prototype.forEach.call(rr.getClientRects(), function (x) {
        if (x.width > 0.5) tops[Math.round(x.top)] = 1;
      });
      if (Object.keys(tops).length > 1) res.split.push(m[0]);
    }
  }
  res.texts = items.length;
  items.forEach(function (it) {
    var inScroll = false;
    for (var a = it.el; a && a !== doc.body; a = a.parentElement) {
      var cs = win.getComputedStyle(a);
      if (scrolls(cs)) { inScroll = true; continue; }   // reachable by scrolling its own box
      if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') {
        var b = a.getBoundingClientRect();
        if (it.r.left < b.left - 0.5 || it.r.right > b.right + 0.5
            || it.r.top < b.top - 0.5 || it.r.bottom > b.bottom + 0.5)
          res.clipped.push([a.tagName + '.' + a.className, it.text]);
      }
    }
    if (!inScroll && (it.r.right > win.innerWidth + 0.5 || it.r.left < -0.5)) res.clipped.push(['page width', it.text]);
  });
  doc.querySelectorAll('.scroll').forEach(function (s) {
    var b = s.getBoundingClientRect();
    if (visible(s, win) && b.right > win.innerWidth + 0.5) res.clipped.push(['scroll box', s.textContent.slice(0, 40)]);
  });
  // Tables: one wider than the page must scroll inside its own box, and say so where it is cut off
  // (a visible hint, and a shadow at the edge where it goes on); none may be cut with no way to it.
  res.tables = 0; res.scrolling = 0; res.cut = []; res.unhinted = [];
  doc.querySelectorAll('table').forEach(function (t) {
    if (!visible(t, win)) return;
    res.tables++;
    var box = t.closest('.scroll'), tb = t.getBoundingClientRect();
    if (!box) { if (tb.right > win.innerWidth + 0.5) res.cut.push(t.textContent.trim().slice(0, 40)); return; }
    if (box.scrollWidth <= box.clientWidth + 1) return;
    res.scrolling++;
    var hint = box.querySelector('.hint'), cs = win.getComputedStyle(box);
    var shown = hint && visible(hint, win) && hint.getBoundingClientRect().height > 0;
    if (!shown || cs.backgroundImage.indexOf('gradient') < 0 || cs.overflowX === 'hidden')
      res.unhinted.push(t.textContent.trim().slice(0, 40));
  });
  items.sort(function (a, b) { return a.r.top - b.r.top; });
  for (var i = 0; i < items.length; i++) {
    var a = items[i].r;
    for (var j = i + 1; j < items.length && items[j].r.top < a.bottom - 1; j++) {
      var b = items[j].r;
      var ox = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      var oy = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (ox > 1 && oy > 1) res.overlaps.push([items[i].text, items[j].text]);
    }
  }
  doc.querySelectorAll('svg').forEach(function (s) {
    if (!visible(s, win)) return;
    res.svgs++;
    var b = s.getBoundingClientRect();
    var id = (s.closest('figure') || s.parentElement).id;
    if (b.width < 250 || b.height < 100 || b.right > win.innerWidth + 0.5) res.clipped.push(['svg', id]);
    // matplotlib draws text as glyphs in <g transform="translate(..) scale(s -s)">: s x 100 is
    // the font size in user units; times the screen CTM's scale, in CSS pixels
    s.querySelectorAll('g[transform*="scale("]').forEach(function (g) {
      var t = /scale\(([\d.]+) -([\d.]+)\)/.exec(g.getAttribute('transform'));
      if (!t) return;
      var m = g.getScreenCTM(), px = 100 * Math.sqrt(m.a * m.a + m.b * m.b);   // rotated text too
      if (res.minSvgTextPx === null || px < res.minSvgTextPx) res.minSvgTextPx = px;
      if (px < %MIN% - 0.05) res.smallText.push([id, Math.round(px * 10) / 10]);
    });
  });
  return res;
}
""".replace("%MIN%", str(MIN_FIGURE_TEXT_PX))


def _layout(page: str, tmp_path, width: int = 1280) -> dict:
    """Load page in an iframe of the given width, open every <details>, run CHECK_JS."""
    harness = tmp_path / f"harness-{width}.html"
    harness.write_text(
        "<!DOCTYPE html><html><body style='margin:0'>"
        f"<iframe id='f' src='file://{os.path.abspath(page)}' style='width:{width}px;height:40000px;border:0'></iframe>"
        "<pre id='result'>pending</pre><script>"
        + CHECK_JS
        + "document.getElementById('f').addEventListener('load', function () {"
        "  var w = this.contentWindow, d = this.contentDocument;"
        "  d.querySelectorAll('details').forEach(function (x) { x.open = true; });"
        "  document.getElementById('result').textContent = JSON.stringify(check(d, w));"
        "});</script></body></html>",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [
            CHROME,
            *_args(tmp_path),
            "--allow-file-access-from-files",
            "--virtual-time-budget=20000",
            f"--window-size={width + 20},1000",
            "--dump-dom",
            f"file://{harness}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r'<pre id="result">(.*?)</pre>', proc.stdout, re.S)
    assert m and m.group(1) != "pending", proc.stdout[-2000:]
    return json.loads(html.unescape(m.group(1)))


def _args(tmp_path):
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chrome-profile'}",
    ]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    with open(SMALL, encoding="utf-8", errors="replace") as fh:
        games = [g.strip() + "\n\n" for g in re.split(r"\n\s*\n(?=\[)", fh.read()) if g.strip()]
    (d / "lichess.pgn").write_text("".join(games[:800]), encoding="utf-8")
    out = d / "out"
    proc, _ = cli(
        "scan",
        str(d / "lichess.pgn"),
        EDGE,
        DRAUGHTS,
        "--out",
        str(out),
        "--edition",
        "fide_2018,fide_2014,fide_2009,lichess,fshr_russian,fmjd_64",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return report.write_report(str(out))


@pytest.mark.parametrize("width", WIDTHS)
def test_page_fits_every_screen(page, tmp_path, width):
    res = _layout(page, tmp_path, width)
    assert res["texts"] > 300 and res["svgs"] >= 6
    assert res["overflowX"] <= 0, f"the page is {res['width']} px wide at {width} px"
    assert res["overlaps"] == []
    assert res["clipped"] == []
    assert res["split"] == [], "numbers split from their units"
    assert res["smallText"] == [], f"figure text below {MIN_FIGURE_TEXT_PX} px"


def test_no_table_is_cut_off_on_a_phone(page, tmp_path):
    """At 390 px a table wider than the screen scrolls in its own box, with a visible hint that it
    does (and a shadow at the edge where it goes on); issue 39: two were cut at the edge with no hint."""
    res = _layout(page, tmp_path, 390)
    assert res["tables"] >= 5 and res["scrolling"] >= 2  # the page has tables that do not fit a phone
    assert res["cut"] == [] and res["unhinted"] == [], res


def test_the_table_check_fails_on_a_cut_table(tmp_path):
    bad = tmp_path / "bad-tables.html"
    cell = "<td>wide&nbsp;cell&nbsp;of&nbsp;a&nbsp;table</td>" * 12
    bad.write_text(
        "<!DOCTYPE html><html><body style='margin:0'>"
        f"<div class='scroll' style='overflow-x:auto'><table><tr>{cell}</tr></table></div>"
        f"<table><tr>{cell}</tr></table></body></html>",
        encoding="utf-8",
    )
    res = _layout(str(bad), tmp_path, 390)
    assert res["scrolling"] == 1 and len(res["unhinted"]) == 1 and len(res["cut"]) == 1


def test_the_check_fails_on_a_broken_page(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body>"
        "<p style='position:absolute;top:10px;left:10px'>first text here</p>"
        "<p style='position:absolute;top:12px;left:30px'>second text here</p>"
        "<div style='position:absolute;top:100px;width:40px;overflow:hidden;white-space:nowrap'>"
        "a long line that does not fit</div>"
        "<table style='position:absolute;top:200px'><tr>"
        + "<td>wide&nbsp;cell&nbsp;of&nbsp;a&nbsp;table</td>"
        * 12
        + "</tr></table>"
        "<p style='position:absolute;top:300px;width:62px;font:16px monospace'>ab 0.015 %</p>"
        "<svg viewBox='0 0 504 100' style='position:absolute;top:400px;width:300px'>"
        "<g transform='translate(10 50) scale(0.09 -0.09)'><path d='M0 0h50v50z'/></g></svg>"
        "</body></html>",
        encoding="utf-8",
    )
    res = _layout(str(bad), tmp_path, 390)
    assert res["overlaps"] and res["clipped"]
    assert res["overflowX"] > 0  # the table runs off the page
    assert res["split"] == ["0.015 %"]
    assert res["smallText"] and res["smallText"][0][1] < 9  # 9 pt of a 504-pt figure shown 300 px wide


def test_screenshot_is_not_blank(page, tmp_path):
    shot = tmp_path / "page.png"
    proc = subprocess.run(
        [
            CHROME,
            *_args(tmp_path),
            "--hide-scrollbars",
            "--window-size=1280,2400",
            f"--screenshot={shot}",
            f"file://{os.path.abspath(page)}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    from PIL import Image

    im = Image.open(shot).convert("L")
    assert im.size == (1280, 2400)
    lo, hi = im.getextrema()
    assert hi - lo > 100
    if os.environ.get("ANALYZER_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["ANALYZER_KEEP_SCREENSHOT"])
