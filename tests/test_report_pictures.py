"""The pictures of the exposure map: the map itself, the Markdown report's Mermaid, the HTML report (issue 13).

- The map (auditor/report/exposure_map.py) of the bundled example, node by node and edge by
  edge, its folding on a large cluster, and its determinism.
- The Mermaid flowchart, rendered by the real `mermaid` library (npm, pinned in
  tests/mermaid/package.json, loaded from disk) in Debian's headless Chromium: it parses, and
  its nodes say what the map says, also with hostile names.
- The HTML report in the same browser (tests/browser.py): the map's nodes and edges are in its
  SVG, the filters work with JavaScript and everything is shown without it, nothing is fetched,
  nothing from the input runs. Screenshots go to reports/pictures/ for review.

The browser tests skip, saying why, where Chromium (or, for Mermaid, node/npm) is missing;
`.ci/run` installs both where the machine allows.
"""

from __future__ import annotations

import html
import json
import re
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from auditor.engine import AuditResult
from auditor.exposure import VerdictKind
from auditor.report import exposure_map, mermaid, svg_map
from auditor.report import html as html_report
from auditor.report import markdown as markdown_report
from tests import browser
from tests.conftest import FIXTURES, ROOT, audit_text

DRIFTED = FIXTURES / "clusters" / "drifted.json"
EXPOSURE = FIXTURES / "clusters" / "exposure.yaml"
EXPOSURE_ARGS = ("--posture", str(FIXTURES / "clusters" / "exposure-posture.yaml"),
                 "--exceptions", str(FIXTURES / "clusters" / "exposure-exceptions.yaml"))
SHOTS = ROOT / "reports" / "pictures"
AS_OF = ("--as-of", "2026-11-29")


def _audit(tmp_path: Path, *args: str, name: str = "audit.html") -> tuple[Path, AuditResult]:
    """The HTML report of the CLI (written with --html), and the AuditResult of the same run."""
    from tests.test_live_fixtures import run

    captured: list[AuditResult] = []
    import auditor.report as report_module

    original = report_module.render

    def keep(format_name: str, result: AuditResult, *rest: Any) -> str:
        captured.append(result)
        return original(format_name, result, *rest)

    report_module.render = keep  # type: ignore[assignment]
    try:
        out = tmp_path / name
        done = run(*args, *AS_OF, "--html", str(out), "--format", "json", cwd=ROOT)
    finally:
        report_module.render = original  # type: ignore[assignment]
    assert done.code in (0, 1), done.stderr
    return out, captured[0]


# --- the map ------------------------------------------------------------------------------------


def _titles(drawn: exposure_map.ExposureMap) -> dict[str, str]:
    return {node.id: node.title for node in drawn.nodes}


def test_the_map_of_the_bundled_example(tmp_path: Path) -> None:
    _, result = _audit(tmp_path, str(DRIFTED))
    drawn = exposure_map.build(result.exposures, cap=100)
    nodes = [(n.layer.name, n.title, n.kind, n.status.value) for n in drawn.nodes]
    assert nodes == [
        ("LAN", "LAN", "", "drift"),
        ("ADDRESS", "192.168.67.240", "LB IP, L2 default-l2", "sanctioned"),
        ("ADDRESS", "192.168.67.241", "LB IP, L2 default-l2", "drift"),
        ("ADDRESS", "every node IP", "", "drift"),
        ("LISTENER", "gateway/edge websecure", "HTTPS :443 *.cluster.lan", "sanctioned"),
        ("ROUTE", "mlflow/mlflow", "HTTPRoute mlflow.cluster.lan", "sanctioned"),
        ("SERVICE", "kubernetes-dashboard/kubernetes-dashboard-nodeport", "Service", "excepted"),
        ("SERVICE", "mail/mailpit-smtp", "Service", "drift"),
        ("SERVICE", "mlflow/mlflow", "Service", "sanctioned"),
        ("SERVICE", "mlflow/mlflow-nodeport", "Service", "drift"),
        ("WORKLOAD", "kubernetes-dashboard/kubernetes-dashboard-kong", "Deployment", "excepted"),
        ("WORKLOAD", "mail/mailpit", "Deployment", "drift"),
        ("WORKLOAD", "mlflow/mlflow", "Deployment", "drift"),  # also reached by the stray NodePort
    ]
    titles = _titles(drawn)
    edges = {(titles[e.source], titles[e.target], e.label, e.status.value) for e in drawn.edges}
    assert edges == {
        ("LAN", "192.168.67.240", "", "sanctioned"), ("LAN", "192.168.67.241", "", "drift"),
        ("LAN", "every node IP", "", "drift"),
        ("192.168.67.240", "gateway/edge websecure", "", "sanctioned"),  # the listener names its port
        ("every node IP", "gateway/edge websecure", "31443/TCP", "sanctioned"),
        ("192.168.67.241", "mail/mailpit-smtp", "25/TCP", "drift"),
        ("every node IP", "mail/mailpit-smtp", "31025/TCP", "drift"),
        ("every node IP", "kubernetes-dashboard/kubernetes-dashboard-nodeport", "30443/TCP", "excepted"),
        ("every node IP", "mlflow/mlflow-nodeport", "30500/TCP", "drift"),
        ("gateway/edge websecure", "mlflow/mlflow", "", "sanctioned"),
        ("mlflow/mlflow", "mlflow/mlflow", "", "sanctioned"),  # route -> Service, Service -> Deployment
        ("kubernetes-dashboard/kubernetes-dashboard-nodeport", "kubernetes-dashboard/kubernetes-dashboard-kong", "",
         "excepted"),
        ("mail/mailpit-smtp", "mail/mailpit", "", "drift"), ("mlflow/mlflow-nodeport", "mlflow/mlflow", "", "drift"),
    }
    assert len(drawn.edges) == 15
    assert drawn.counts == ((VerdictKind.DRIFT, 3), (VerdictKind.EXCEPTED, 1), (VerdictKind.SANCTIONED, 2))
    assert drawn.folding == exposure_map.Folding()


def test_every_channel_and_declaration_has_its_place_on_the_map(tmp_path: Path) -> None:
    _, result = _audit(tmp_path, str(EXPOSURE), *EXPOSURE_ARGS)
    drawn = exposure_map.build(result.exposures, cap=100)
    by_title = {(n.layer.name, n.title): n for n in drawn.nodes}
    assert by_title[("ADDRESS", "192.168.67.53")].kind == "external IP, L2 default-l2"
    assert by_title[("SERVICE", "media/plex")].kind == "Service in HelmRelease values"
    assert by_title[("SERVICE", "games/minecraft")].kind == "Service in Application values"
    assert by_title[("ROUTE", "database/postgres")].kind == "TCPRoute (forwards nothing)"
    assert by_title[("LISTENER", "network/internal http")].status is VerdictKind.DRIFT  # not the edge Gateway
    assert by_title[("WORKLOAD", "monitoring/prometheus-node-exporter")].status is VerdictKind.SANCTIONED
    titles = _titles(drawn)
    hostport = {(titles[e.source], e.label, e.status) for e in drawn.edges if titles[e.target] == "mail/mailpit"}
    assert hostport == {("every node IP", "1025/TCP", VerdictKind.EXCEPTED), ("mail/smtp", "", VerdictKind.DRIFT)}
    assert sum(n.ways for n in drawn.nodes if n.layer is exposure_map.Layer.LAN) == len(result.exposures)


def _many_namespaces(count: int, quiet: int) -> str:
    """`count` namespaces, each with 3 NodePort Services and their Deployments; the first `quiet` excepted."""
    docs = []
    for n in range(count):
        namespace = f"{'quiet' if n < quiet else 'loud'}-{n:02d}"
        for s in range(3):
            docs.append(f"""apiVersion: v1
kind: Service
metadata: {{name: app-{s}, namespace: {namespace}}}
spec:
  type: NodePort
  selector: {{app: app-{s}}}
  ports: [{{port: 80, nodePort: {30000 + n * 3 + s}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app-{s}, namespace: {namespace}}}
spec:
  selector: {{matchLabels: {{app: app-{s}}}}}
  template:
    metadata: {{labels: {{app: app-{s}}}}}
    spec: {{containers: [{{name: app, image: nginx}}]}}""")
    return "\n---\n".join(docs) + "\n"


QUIET_EXCEPTIONS = """exceptions:
  - name: quiet-namespaces
    rules: [nodeport-service-not-excepted]
    match: {kind: Service, namespace: "quiet-*"}
    reason: Lab namespaces reached on node ports by design.
"""


@pytest.fixture(scope="module")
def large_result(tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    folder = tmp_path_factory.mktemp("large")
    return audit_text(folder, _many_namespaces(40, 10), exceptions=QUIET_EXCEPTIONS,
                      rules=("nodeport-service-not-excepted",))


def test_a_large_map_folds_whole_namespaces_and_says_how_much(large_result: AuditResult) -> None:
    full = exposure_map.build(large_result.exposures, cap=10_000)
    assert len(full.nodes) == 2 + 40 * 6 and full.folding.nodes == 0  # LAN, every node IP, 3 + 3 per namespace
    for cap in (200, 120, 60, 30):
        drawn = exposure_map.build(large_result.exposures, cap=cap)
        assert len(drawn.nodes) <= cap, cap
        assert drawn.ways == full.ways == 120
        groups = [n for n in drawn.nodes if n.folded]
        assert sum(n.folded for n in groups) == drawn.folding.nodes
        assert drawn.folding.groups == len(groups)
        kept = len(drawn.nodes) - len(groups)
        assert kept + drawn.folding.nodes == len(full.nodes)
        # Each group counts the ways in through it; no way in is lost.
        assert sum(n.ways for n in drawn.nodes if n.layer is exposure_map.Layer.SERVICE) == 120
    drawn = exposure_map.build(large_result.exposures, cap=202)  # folding the 10 quiet namespaces saves 40 nodes
    folded = {n.title for n in drawn.nodes if n.folded}
    assert folded and all(title.startswith("quiet-") for title in folded), "namespaces without drift fold first"
    assert {n.kind for n in drawn.nodes if n.folded} == {"3 Services folded", "3 workloads folded"}
    assert drawn.folding.sentence == f"{drawn.folding.nodes} nodes of 10 namespaces folded into 20 groups"
    tight = exposure_map.build(large_result.exposures, cap=30)
    assert any(n.title == exposure_map.OTHER_NAMESPACES for n in tight.nodes)


def test_the_map_is_the_same_for_the_same_input(large_result: AuditResult) -> None:
    first = exposure_map.build(large_result.exposures, cap=60)
    again = exposure_map.build(tuple(large_result.exposures), cap=60)
    assert first == again
    assert svg_map.render(first) == svg_map.render(again)
    assert mermaid.flowchart(first) == mermaid.flowchart(again)


# --- hostile names ----------------------------------------------------------------------------------

HOSTILE = [
    'a"];click n1 "javascript:alert(1)";%%',
    "<img src=x onerror=document.title='pwned'>",
    "</script><script>document.title='pwned'</script>",
    "```\n## injected heading\n[link](javascript:alert(1)) #tag; |cell| end --> x `tick`",
]


def _hostile_manifest() -> str:
    docs = []
    for index, name in enumerate(HOSTILE):
        docs.append({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": name, "namespace": HOSTILE[(index + 1) % len(HOSTILE)]},
                     "spec": {"type": "NodePort", "selector": {"app": f"a{index}"},
                              "ports": [{"port": 80, "nodePort": 30080 + index}]}})
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": HOSTILE[(index + 2) % len(HOSTILE)],
                                  "namespace": HOSTILE[(index + 1) % len(HOSTILE)]},
                     "spec": {"selector": {"matchLabels": {"app": f"a{index}"}},
                              "template": {"metadata": {"labels": {"app": f"a{index}"}},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=1)


HOSTILE_EXCEPTIONS = """exceptions:
  - name: hostile-reason
    rules: [nodeport-service-not-excepted]
    match: {kind: Service, name: "a*"}
    reason: "<script>document.title='pwned'</script> ]]> --> \\"quoted\\" `tick` | pipe"
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AuditResult, str]:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile.json").write_text(_hostile_manifest(), encoding="utf-8")
    (folder / "exceptions.yaml").write_text(HOSTILE_EXCEPTIONS, encoding="utf-8")
    page, result = _audit(folder, str(folder / "hostile.json"), "--exceptions", str(folder / "exceptions.yaml"))
    return page, result, markdown_report.render(result)


def _mermaid_block(markdown: str) -> list[str]:
    assert markdown.count("```mermaid\n") == 1
    block = markdown.split("```mermaid\n", 1)[1]
    assert "```" in block
    return block.split("```", 1)[0].rstrip("\n").split("\n")


def test_hostile_names_stay_text_in_the_mermaid(hostile: tuple[Path, AuditResult, str]) -> None:
    _, result, markdown = hostile
    lines = _mermaid_block(markdown)
    # Inside a label: no quote, backtick, markup, `|`, `;`, `%`, `#` or backslash but in an entity code (`#60;`);
    # `<br>` is the map's own line break.
    text = r'(?:[^"`<>&|;%#\\\n]|#\d+;)'
    node = re.compile(rf'^  n\d+(\(\["|\["|\{{\{{"|\[/"|\("|\[\[")(?:{text}|<br>)*("\]\)|"\]|"\}}\}}|"/\]|"\)|"\]\])$')
    edge = re.compile(rf'^  n\d+ -\.?->(\|"{text}*"\|)? n\d+$')
    style = re.compile(r"^  (classDef|class|linkStyle) [a-z0-9, #:.-]+$")
    for line in lines[1:]:
        assert node.match(line) or edge.match(line) or style.match(line), line
    # The closing fence comes right after the block: nothing in a name could end it early.
    after = markdown.split("```mermaid\n", 1)[1].split("\n```\n", 1)[1]
    assert "injected heading" not in after.split("### ", 1)[0]
    drawn = exposure_map.build(result.exposures, mermaid.CAP)
    assert len([line for line in lines if node.match(line)]) == len(drawn.nodes)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script.append(data)


ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "main", "footer", "nav", "h1", "h2", "p",
                "a", "ul", "li", "b", "span", "code", "br", "div", "table", "thead", "tbody", "tr", "th", "td",
                "form", "label", "select", "option", "button", "details", "summary", "script", "svg", "defs",
                "marker", "path", "g", "rect", "text"}


def test_hostile_names_stay_text_in_the_html(hostile: tuple[Path, AuditResult, str]) -> None:
    page, _, _ = hostile
    text = page.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    assert {tag for tag, _ in parser.tags} <= ALLOWED_TAGS
    assert [tag for tag, _ in parser.tags].count("script") == 1
    assert "".join(parser.script) == html_report.SCRIPT
    for tag, attributes in parser.tags:
        for name, value in attributes.items():
            assert not name.startswith("on"), (tag, name)  # no event handler, whatever the input
            assert name not in ("src", "action", "formaction", "xlink:href", "srcset", "style"), (tag, name)
            if name == "href":  # the only links: to the page's own sections
                assert value is not None and re.fullmatch("#[a-z-]+", value), value
    assert text.count("<script>") == 1 and "&lt;/script&gt;&lt;script&gt;" in text
    assert "javascript:alert(1)" in html.unescape(text)  # shown, as text


# --- in the browser -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[browser.Chromium]:
    if browser.executable() is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium when run as root)")
    with browser.Chromium.start() as started:
        yield started


@pytest.fixture(scope="module")
def drifted_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AuditResult]:
    return _audit(tmp_path_factory.mktemp("drifted"), str(DRIFTED))


def _shot(page: browser.Page, name: str, selector: str | None = None) -> None:
    page.screenshot(SHOTS / name, selector=selector)


def test_the_html_map_holds_the_nodes_and_edges_of_the_example(chromium: browser.Chromium,
                                                               drifted_page: tuple[Path, AuditResult]) -> None:
    path, result = drifted_page
    page = chromium.page(width=1800)
    page.goto(path.as_uri())
    drawn = exposure_map.build(result.exposures, svg_map.CAP)
    found = json.loads(page.evaluate("""JSON.stringify(Array.from(document.querySelectorAll('svg .node')).map(g => ({
        id: g.id, classes: g.getAttribute('class'),
        text: Array.from(g.querySelectorAll('text')).map(t => t.textContent),
        tooltip: g.querySelector('title').textContent, width: g.getBBox().width})))"""))
    by_id = {f["id"]: f for f in found}
    assert sorted(by_id) == sorted(svg_map.node_ids(drawn.nodes)) and len(found) == len(drawn.nodes)
    for node in drawn.nodes:
        shown = by_id[f"map-{node.id}"]
        assert shown["tooltip"] == node.description
        if shown["text"][0] == node.title:
            assert shown["text"][1:] == ([node.kind] if node.kind else [])
        else:  # too long for its box: the namespace moves to the second line
            assert node.namespace and node.title == f"{node.namespace}/{shown['text'][0]}"
            assert shown["text"][1] == f"{node.kind} in {node.namespace}"
        assert node.status.value in shown["classes"] or node.layer is exposure_map.Layer.LAN
        assert shown["width"] > 0  # laid out, not just in the markup
    edges = json.loads(page.evaluate("""JSON.stringify(Array.from(document.querySelectorAll('svg path.edge')).map(p => [
        p.id, p.dataset.from, p.dataset.to, p.getTotalLength()]))"""))
    assert [(e[0], e[1], e[2]) for e in edges] == [
        (f"map-e{n}", edge.source, edge.target) for n, edge in enumerate(drawn.edges, start=1)]
    assert all(length > 20 for *_, length in edges)
    assert page.requests == [path.as_uri()], "the report fetches nothing"
    assert page.console_errors() == []
    _shot(page, "drifted-map.png", "svg.exposure-map")
    _shot(page, "drifted-page.png")


def test_the_content_security_policy_admits_the_page_and_refuses_any_fetch(
        chromium: browser.Chromium, drifted_page: tuple[Path, AuditResult]) -> None:
    path, _ = drifted_page
    page = chromium.page()
    page.goto(path.as_uri())
    # The inline style sheet and script are admitted by their hashes: the style applies, the script ran.
    assert "system-ui" in page.evaluate("getComputedStyle(document.body).fontFamily")
    assert page.evaluate("document.getElementById('filters').hidden") is False
    refused = page.evaluate("""new Promise(resolve => {
        const seen = [];
        document.addEventListener('securitypolicyviolation', e => {
            seen.push(e.effectiveDirective + ' ' + e.blockedURI); if (seen.length === 3) { resolve(seen.sort()); } });
        fetch('http://127.0.0.1:9/beacon').catch(() => {});
        new Image().src = 'http://127.0.0.1:9/pixel.png';
        const script = document.createElement('script'); script.src = 'http://127.0.0.1:9/x.js';
        document.body.appendChild(script);
    })""", await_promise=True)
    assert refused == ["connect-src http://127.0.0.1:9/beacon", "img-src http://127.0.0.1:9/pixel.png",
                       "script-src-elem http://127.0.0.1:9/x.js"]
    # DevTools sees each attempt, and Chromium stops it for the policy before it reaches the network.
    assert page.blocked() == {"http://127.0.0.1:9/pixel.png": "csp", "http://127.0.0.1:9/x.js": "csp"}
    assert set(page.requested()) == {path.as_uri(), *page.blocked()}
    assert "http://127.0.0.1:9/beacon" not in page.requested()  # fetch() refused before it was even a request


def _visible_rows(page: browser.Page) -> dict[str, int]:
    return json.loads(page.evaluate("""JSON.stringify(Object.fromEntries(Array.from(
        document.querySelectorAll('table[data-filtered]')).map(t => [t.id,
        Array.from(t.tBodies[0].rows).filter(r => !r.hidden && r.offsetParent !== null).length]))) """))


def _choose(page: browser.Page, name: str, value: str) -> None:
    page.evaluate(f"""(function () {{ var s = document.querySelector('#filters select[name={json.dumps(name)}]');
        s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()""")


def test_the_findings_filter_with_javascript(chromium: browser.Chromium,
                                             drifted_page: tuple[Path, AuditResult]) -> None:
    path, result = drifted_page
    page = chromium.page()
    page.goto(path.as_uri())
    assert page.evaluate("document.getElementById('filters').hidden") is False
    failed = [f for f in result.findings if f.status.value == "failed"]
    excepted = [f for f in result.findings if f.status.value == "excepted"]
    assert _visible_rows(page) == {"failed-findings": len(failed), "excepted-findings": len(excepted)}
    _choose(page, "rule", "lb-service-not-excepted")
    assert _visible_rows(page) == {"failed-findings": sum(f.rule == "lb-service-not-excepted" for f in failed),
                                   "excepted-findings": 0}
    _choose(page, "rule", "")
    _choose(page, "severity", "warning")
    assert _visible_rows(page)["failed-findings"] == sum(f.severity is not None and f.severity.value == "warning"
                                                         for f in failed)
    _choose(page, "namespace", "kube-system")
    both = sum(f.object.namespace == "kube-system" and f.severity is not None and f.severity.value == "warning"
               for f in failed)
    assert _visible_rows(page)["failed-findings"] == both
    assert page.evaluate("document.getElementById('filter-status').textContent") == (
        f"{both} of {len(result.findings)} findings shown")
    _shot(page, "drifted-filtered.png", "#findings ~ table")
    page.evaluate("document.getElementById('filter-clear').click()")
    assert _visible_rows(page) == {"failed-findings": len(failed), "excepted-findings": len(excepted)}
    assert page.console_errors() == []


def test_everything_is_shown_without_javascript(chromium: browser.Chromium,
                                                drifted_page: tuple[Path, AuditResult]) -> None:
    path, result = drifted_page
    page = chromium.page(javascript=False)
    page.goto(path.as_uri())
    dom = page.html()
    assert 'id="filters" class="filters" hidden' in dom  # the form stays hidden: nothing to filter with
    with pytest.raises(browser.BrowserError):
        page.box("#filters")  # not rendered
    rows = re.findall(r"<tr[^>]*data-rule=[^>]*>", dom)
    assert len(rows) == len(result.findings) and not any(" hidden" in row for row in rows)
    last = len([f for f in result.findings if f.status.value == "failed"])
    assert page.box(f"#failed-findings tbody tr:nth-child({last})")["height"] > 0
    assert page.box("svg.exposure-map")["width"] > 0
    assert dom.count('class="node ') == len(exposure_map.build(result.exposures, svg_map.CAP).nodes)
    _shot(page, "drifted-page-no-javascript.png")


def test_nothing_from_hostile_input_runs_in_the_browser(chromium: browser.Chromium,
                                                         hostile: tuple[Path, AuditResult, str]) -> None:
    path, _, _ = hostile
    page = chromium.page()
    page.goto(path.as_uri())
    assert page.evaluate("document.title") == "Cilium exposure audit"
    assert page.evaluate("document.querySelectorAll('script').length") == 1
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.requests == [path.as_uri()]
    assert page.console_errors() == []
    shown = page.evaluate("document.querySelector('svg.exposure-map').textContent")
    assert HOSTILE[1] in shown or "<img src=x" in shown  # the name is text (cut to its box's width)
    _shot(page, "hostile-map.png", "svg.exposure-map")


# --- the Markdown report's Mermaid, rendered by mermaid --------------------------------------------


@pytest.fixture(scope="module")
def mermaid_page(chromium: browser.Chromium) -> browser.Page:
    try:
        library = browser.mermaid_library()
    except browser.Unavailable as missing:
        pytest.skip(str(missing))
    folder = Path(tempfile.mkdtemp(prefix="audit-mermaid-"))
    (folder / "render.html").write_text(f'<!DOCTYPE html><meta charset="utf-8"><script src="{library.as_uri()}">'
                                        "</script><body></body>", encoding="utf-8")
    page = chromium.page(width=1600)
    page.goto((folder / "render.html").as_uri())
    assert page.requests == [(folder / "render.html").as_uri(), library.as_uri()], "loaded from disk, nothing else"
    return page


def _render_mermaid(page: browser.Page, text: str, html_labels: bool = True) -> dict[str, Any]:
    """Render with the real library (GitHub's settings: strict security), keep the SVG in the page."""
    script = """(async function (text, htmlLabels) {
        mermaid.initialize({startOnLoad: false, securityLevel: 'strict', htmlLabels: htmlLabels,
                            flowchart: {htmlLabels: htmlLabels}});
        try {
            window.renders = (window.renders || 0) + 1;
            const {svg, diagramType} = await mermaid.render('m' + window.renders, text);
            document.body.innerHTML = svg;
            const nodes = Array.from(document.querySelectorAll('g.node')).map(g => [
                (g.id.match(/flowchart-(n\\d+)-/) || [])[1], g.textContent, g.getAttribute('class')]);
            const edges = Array.from(document.querySelectorAll('path[data-id^="L_"]')).map(p => [
                p.getAttribute('data-id'), p.getAttribute('style') || '']);
            const labels = Array.from(document.querySelectorAll('g.edgeLabel')).map(g => g.textContent)
                .filter(t => t.length > 0);
            return JSON.stringify({diagramType, nodes, edges, labels});
        } catch (error) { return JSON.stringify({error: String(error && error.message || error)}); }
    })"""
    rendered: dict[str, Any] = json.loads(page.evaluate(f"{script}({json.dumps(text)}, {json.dumps(html_labels)})",
                                                        await_promise=True))
    assert "error" not in rendered, rendered.get("error")
    return rendered


def _flat(text: str) -> str:
    return " ".join(text.split())


def _check_rendered(rendered: dict[str, Any], drawn: exposure_map.ExposureMap) -> None:
    assert rendered["diagramType"] == "flowchart-v2"
    shown = {node_id: (text, classes) for node_id, text, classes in rendered["nodes"]}
    assert sorted(shown) == sorted(node.id for node in drawn.nodes)
    for node in drawn.nodes:
        text, classes = shown[node.id]
        assert _flat(text).replace(" ", "") == _flat(node.title + node.kind).replace(" ", ""), (text, node)
        assert (("lan" if node.layer is exposure_map.Layer.LAN else node.status.value) in classes.split())
    drawn_edges = {(edge.source, edge.target): edge for edge in drawn.edges}
    pairs = {tuple(edge_id.split("_")[1:3]): style for edge_id, style in rendered["edges"]}
    assert sorted(pairs) == sorted(drawn_edges) and len(rendered["edges"]) == len(drawn.edges)
    for pair, style in pairs.items():  # linkStyle coloured each edge by its verdict
        assert f"stroke:{mermaid.COLOURS[drawn_edges[pair].status][1]}" in style, (pair, style)
    assert sorted(_flat(label) for label in rendered["labels"]) == sorted(
        _flat(edge.label) for edge in drawn.edges if edge.label)


def test_the_markdown_mermaid_renders_with_mermaid(mermaid_page: browser.Page,
                                                   drifted_page: tuple[Path, AuditResult]) -> None:
    _, result = drifted_page
    text = "\n".join(_mermaid_block(markdown_report.render(result)))
    _check_rendered(_render_mermaid(mermaid_page, text), exposure_map.build(result.exposures, mermaid.CAP))
    mermaid_page.screenshot(SHOTS / "drifted-mermaid.png", selector="svg")


def test_hostile_mermaid_renders_and_reads_back(mermaid_page: browser.Page,
                                                hostile: tuple[Path, AuditResult, str]) -> None:
    _, result, markdown = hostile
    text = "\n".join(_mermaid_block(markdown))
    drawn = exposure_map.build(result.exposures, mermaid.CAP)
    _check_rendered(_render_mermaid(mermaid_page, text), drawn)  # HTML labels: exactly the names
    plain = _render_mermaid(mermaid_page, text, html_labels=False)  # SVG text: the encoded ones as &#NN;
    titles = {node.id: node.title + node.kind for node in drawn.nodes}
    for node_id, shown, _ in plain["nodes"]:
        assert "".join(html.unescape(shown).split()) == "".join(titles[node_id].split())
    mermaid_page.screenshot(SHOTS / "hostile-mermaid.png", selector="svg")


def test_a_folded_mermaid_renders(mermaid_page: browser.Page, large_result: AuditResult) -> None:
    text = "\n".join(_mermaid_block(markdown_report.render(large_result)))
    drawn = exposure_map.build(large_result.exposures, mermaid.CAP)
    assert drawn.folding.nodes and len(drawn.nodes) <= mermaid.CAP
    _check_rendered(_render_mermaid(mermaid_page, text), drawn)


# --- the format on the command line, and the README ------------------------------------------------


def test_html_is_a_format_of_every_auditing_command(tmp_path: Path) -> None:
    from tests.test_live_fixtures import run

    as_format = run(str(DRIFTED), *AS_OF, "--format", "html", cwd=ROOT)
    dash = run(str(DRIFTED), *AS_OF, "--html", "-", cwd=ROOT)
    to_file = run(str(DRIFTED), *AS_OF, "--html", str(tmp_path / "a.html"), "--format", "json", cwd=ROOT)
    assert as_format.code == dash.code == to_file.code == 1, (as_format.stderr, dash.stderr, to_file.stderr)
    assert as_format.stdout == dash.stdout == (tmp_path / "a.html").read_text(encoding="utf-8")
    assert as_format.stdout.startswith("<!DOCTYPE html>") and json.loads(to_file.stdout)["exposures"]
    live_help = run("live", "--help")
    assert "--html FILE" in live_help.stdout and "html" in live_help.stdout.split("--format", 1)[1].split("\n")[0]


def test_the_readme_mermaid_block_is_fresh() -> None:
    from tests.screenshots import README, readme_block, replace_readme_block

    readme = README.read_text(encoding="utf-8")
    assert readme == replace_readme_block(readme, readme_block()), "regenerate with: python -m tests.screenshots"


@pytest.mark.parametrize("name", ["exposure-map.png", "exposure-map-channels.png"])
def test_the_readme_screenshots_are_committed_small_pngs(name: str) -> None:
    from tests.screenshots import EXAMPLES, IMAGES

    assert name in EXAMPLES
    data = (IMAGES / name).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 600 <= width <= 2400 and 150 <= height <= 1200, (width, height)
    assert len(data) < 300_000
    assert f"](docs/images/{name})" in (ROOT / "README.md").read_text(encoding="utf-8")


# --- a real GitOps repository ------------------------------------------------------------------------

GITOPS = ROOT.parent / "shared" / "gitops"
# The apps of bjw-s-labs/home-ops whose files today's loader reads (downloads/ and observability/
# each hold a file it refuses, notes in tests/test_gitops_repos.py): its edge Gateways, and the
# LoadBalancer Services its Helm values declare.
BJW_S = ("network", "media", "home-automation", "kube-system")


def test_a_real_gitops_repository_through_the_pictures(chromium: browser.Chromium, tmp_path: Path) -> None:
    repo = GITOPS / "bjw-s-labs__home-ops" / "kubernetes" / "apps"
    if not repo.is_dir():
        pytest.skip(f"shared GitOps repositories not present at {GITOPS}")
    path, result = _audit(tmp_path, *(str(repo / folder) for folder in BJW_S))
    drawn = exposure_map.build(result.exposures, svg_map.CAP)
    assert {kind for kind, _ in drawn.counts} == {VerdictKind.DRIFT, VerdictKind.SANCTIONED}
    assert drawn.folding.nodes == 0 and len(drawn.nodes) >= 15
    listeners = {n.title for n in drawn.nodes if n.layer is exposure_map.Layer.LISTENER}
    assert {"envoy-external https", "envoy-internal https"} <= listeners
    page = chromium.page(width=1800)
    page.goto(path.as_uri())
    assert page.evaluate("document.querySelectorAll('svg .node').length") == len(drawn.nodes)
    assert page.evaluate("document.querySelectorAll('svg path.edge').length") == len(drawn.edges)
    assert page.requests == [path.as_uri()] and page.console_errors() == []
    _shot(page, "gitops-bjw-s-map.png", "svg.exposure-map")
