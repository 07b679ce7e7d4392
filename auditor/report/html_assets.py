"""The HTML report's inline style sheet and script, and the Content-Security-Policy that admits only them.

The page loads nothing: the policy's `default-src 'none'` forbids every fetch
(scripts, styles, images, fonts, frames, connections), and the one style sheet
and the one script are allowed by their SHA-256 hash, so no other inline
script (none is written, but a policy is the second lock) would run.

The script is progressive enhancement only: without it every table row is
shown and the filter form stays hidden (`hidden` in the markup). With it, the
form appears and selecting a rule, severity, namespace or cluster hides the
rows of the findings tables that do not match. It writes no HTML (only the
`hidden` property and a text count), so nothing from the input is ever parsed
as markup.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root { color-scheme: light; --drift: #c62828; --excepted: #d98e04; --sanctioned: #2e7d32; --unjudged: #757575;
  --line: #d8dee4; --muted: #57606a; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1600px; padding: 16px 24px 48px; font: 14px/1.45 system-ui, -apple-system,
  "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1f2328; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-top: 8px; border-top: 1px solid var(--line); }
p { margin: 6px 0; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
nav a { margin-right: 14px; }
.verdict { font-size: 16px; font-weight: 600; padding: 6px 10px; border-radius: 6px; display: inline-block; }
.verdict.fail { background: #fde2e1; color: #5f1010; }
.verdict.pass { background: #e3f2e6; color: #123d16; }
.verdict.incomplete { background: #fff1cc; color: #5c3d00; }
.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 10px 0; padding: 0; list-style: none; }
.counts li { border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; }
.counts b { font-size: 16px; }
.map { overflow: auto; border: 1px solid var(--line); border-radius: 6px; background: #fcfcfd; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 6px 0; padding: 0; list-style: none; color: var(--muted); }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; border: 2px solid;
  vertical-align: -1px; margin-right: 5px; }
.swatch.drift { background: #fde2e1; border-color: var(--drift); }
.swatch.excepted { background: #fff1cc; border-color: var(--excepted); }
.swatch.sanctioned { background: #e3f2e6; border-color: var(--sanctioned); }
.swatch.unjudged { background: #eee; border-color: var(--unjudged); border-style: dashed; }
.swatch.folded { background: #fff; border-color: var(--muted); border-style: dashed; }
svg.exposure-map { display: block; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
svg .title { font-size: 12px; font-weight: 600; }
svg .kind { font-size: 10.5px; }
svg .column { font: 600 12px system-ui, sans-serif; fill: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
svg .edge-label { font-size: 10px; fill: #333; paint-order: stroke; stroke: #fcfcfd; stroke-width: 3px; }
svg .node:hover rect { stroke-width: 2.5; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; font-weight: 600; }
td { overflow-wrap: anywhere; }
tr.drift td:first-child, tr.error td:first-child { box-shadow: inset 3px 0 var(--drift); }
tr.excepted td:first-child, tr.warning td:first-child { box-shadow: inset 3px 0 var(--excepted); }
tr.sanctioned td:first-child { box-shadow: inset 3px 0 var(--sanctioned); }
tr.unjudged td:first-child, tr.info td:first-child { box-shadow: inset 3px 0 var(--unjudged); }
.status { font-weight: 600; }
.status.drift, .status.failed, .status.error { color: var(--drift); }
.status.excepted, .status.not-run { color: #8a5a00; }
.status.sanctioned, .status.passed { color: var(--sanctioned); }
.status.unjudged { color: var(--unjudged); }
.muted { color: var(--muted); }
form.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 8px 0; padding: 8px 10px;
  background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; }
form.filters label { display: inline-flex; gap: 6px; align-items: center; }
form.filters[hidden] { display: none; }
tr[hidden] { display: none; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
@media print { .map { overflow: visible; } nav, form.filters { display: none; } th { position: static; } }
""".strip()

SCRIPT = """
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var selects = Array.prototype.slice.call(form.querySelectorAll("select"));
  var tables = Array.prototype.slice.call(document.querySelectorAll("table[data-filtered]"));
  var status = document.getElementById("filter-status");
  function keeps(row) {
    return selects.every(function (select) {
      return select.value === "" || row.getAttribute("data-" + select.name) === select.value;
    });
  }
  function apply() {
    var shown = 0, total = 0;
    tables.forEach(function (table) {
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var keep = keeps(row);
        row.hidden = !keep;
        total += 1;
        if (keep) { shown += 1; }
      });
    });
    status.textContent = (shown === total ? "all " : shown + " of ") + total + " findings shown";
  }
  selects.forEach(function (select) { select.addEventListener("change", apply); });
  document.getElementById("filter-clear").addEventListener("click", function () {
    selects.forEach(function (select) { select.value = ""; });
    apply();
  });
  form.hidden = false;
  apply();
})();
""".strip()


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


# Nothing may be fetched; only this style sheet and this script apply. `form-action`, `base-uri`:
# no form posts anywhere, no <base> redirects relative links (there are none but in-page anchors).
CONTENT_SECURITY_POLICY = (f"default-src 'none'; style-src '{_hash(STYLE)}'; script-src '{_hash(SCRIPT)}'; "
                           "img-src 'none'; font-src 'none'; connect-src 'none'; frame-src 'none'; "
                           "base-uri 'none'; form-action 'none'")
