"""Program text views: a side-by-side reference/candidate diff as escaped, syntax-coloured HTML (long unchanged
runs folded, kernels linked from the top, in a scrolling box so the page stays short), or a unified diff.

All program text comes from the dataset and is untrusted: every piece of it goes through `html.escape` before it
is placed in markup, and the unified view uses `st.code`, which Streamlit renders as text.
"""

from __future__ import annotations

import difflib
import html
import re

import streamlit as st

# Past this many lines (both sides together) the side-by-side table gets heavy: show a unified diff instead.
SIDE_BY_SIDE_MAX_LINES = 1500
# Intraline highlighting only for line pairs this similar (otherwise whole-line colouring reads better).
_INTRALINE_MIN_RATIO = 0.75
# ...and only for lines this short: difflib's character matching is quadratic (issue 45: two 30k-character lines
# differing by one character held the Kernel page for minutes; 8k took 6.3 s); longer ones are coloured whole.
INTRALINE_MAX_CHARS = 500
INTRALINE_BUDGET_CHARS = 100_000  # characters matched intraline in one diff, at most: the rest are coloured whole
# Unchanged runs longer than 2 * FOLD_CONTEXT + 1 lines are folded, keeping FOLD_CONTEXT lines at each end.
FOLD_CONTEXT = 3
DIFF_HEIGHT_PX = 640

_TOKEN = re.compile(
    r"(?P<com>#.*$)|(?P<str>[rbfuRBFU]{0,2}(?:\"\"\"|'''|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'))"
    r"|(?P<dec>@[\w.]+)|(?P<num>\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?\b)"
    r"|(?P<kw>\b(?:def|class|return|if|elif|else|for|while|import|from|as|with|in|not|and|or|is|None|True|False"
    r"|lambda|yield|try|except|finally|raise|pass|break|continue|global|nonlocal|assert|del|async|await)\b)"
)

_CSS = """
<style>
.tlx-diff{border-collapse:collapse;width:100%;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;
 font-size:12px;table-layout:fixed}
.tlx-diff th{text-align:left;padding:4px 6px;border-bottom:1px solid rgba(128,128,128,.4)}
.tlx-diff td{vertical-align:top;padding:0 6px;white-space:pre-wrap;word-break:break-all}
.tlx-diff td.n{color:#888;text-align:right;user-select:none}
.tlx-diff tr.eq td.t{opacity:.85}
.tlx-diff td.del{background:rgba(255,80,80,.14)} .tlx-diff td.add{background:rgba(60,200,90,.14)}
.tlx-diff span.del{background:rgba(255,80,80,.35)} .tlx-diff span.add{background:rgba(60,200,90,.35)}
.tlx-diff tr.fold td{text-align:center;color:#888;font-style:italic;background:rgba(128,128,128,.08)}
.tlx-diff .c-com{color:#6a737d;font-style:italic} .tlx-diff .c-str{color:#b35900} .tlx-diff .c-kw{color:#8250df}
.tlx-diff .c-num{color:#0a7e8c} .tlx-diff .c-dec{color:#1f6feb}
</style>
"""


def _intraline(a: str, b: str) -> tuple[str, str]:
    """Escaped versions of two similar lines with the changed characters wrapped in spans."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    left, right = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        ea, eb = html.escape(a[i1:i2]), html.escape(b[j1:j2])
        if op == "equal":
            left.append(ea)
            right.append(eb)
            continue
        if ea:
            left.append(f'<span class="del">{ea}</span>')
        if eb:
            right.append(f'<span class="add">{eb}</span>')
    return "".join(left), "".join(right)


def highlight(line: str) -> str:
    """One line of Python as escaped HTML with comments, strings, keywords, numbers and decorators in spans."""
    out, at = [], 0
    for m in _TOKEN.finditer(line):
        out.append(html.escape(line[at : m.start()]))
        out.append(f'<span class="c-{m.lastgroup}">{html.escape(m.group(0))}</span>')
        at = m.end()
    out.append(html.escape(line[at:]))
    return "".join(out)


def kernel_anchor(name: str) -> str:
    """The element id of a kernel's first candidate line in the side-by-side table."""
    return "tlx-kernel-" + re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _row(n_a, text_a, cls_a, n_b, text_b, cls_b, row_cls="", anchor="") -> str:
    na = "" if n_a is None else str(n_a)
    nb = "" if n_b is None else str(n_b)
    row_id = f' id="{anchor}"' if anchor else ""
    return (
        f'<tr class="{row_cls}"{row_id}><td class="n">{na}</td><td class="t {cls_a}">{text_a}</td>'
        f'<td class="n">{nb}</td><td class="t {cls_b}">{text_b}</td></tr>'
    )


def side_by_side_html(left: str, right: str, left_title: str, right_title: str, *, fold: bool = True,
                      anchors: dict[int, str] | None = None) -> str:
    """A two-column diff table (line numbers, changed lines coloured, code highlighted), all text HTML-escaped.
    `fold`: unchanged runs keep `FOLD_CONTEXT` lines at each end and a row saying how many are hidden;
    `anchors`: right-side line number -> element id (kernels), never folded away."""
    a, b = left.splitlines(), right.splitlines()
    anchors = anchors or {}
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[str] = []
    budget = INTRALINE_BUDGET_CHARS
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            n = i2 - i1
            keep = set(range(n)) if not fold or n <= 2 * FOLD_CONTEXT + 1 else (
                set(range(FOLD_CONTEXT)) | set(range(n - FOLD_CONTEXT, n))
                | {j - j1 - 1 for j in anchors if j1 < j <= j2})
            hidden = 0
            for k in range(n):
                if k not in keep:
                    hidden += 1
                    continue
                if hidden:
                    rows.append(f'<tr class="fold"><td colspan="4">⋯ {hidden} unchanged lines ⋯</td></tr>')
                    hidden = 0
                text = highlight(a[i1 + k])
                rows.append(_row(i1 + k + 1, text, "", j1 + k + 1, text, "", "eq", anchors.get(j1 + k + 1, "")))
            if hidden:
                rows.append(f'<tr class="fold"><td colspan="4">⋯ {hidden} unchanged lines ⋯</td></tr>')
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            la = a[i1 + k] if i1 + k < i2 else None
            lb = b[j1 + k] if j1 + k < j2 else None
            similar = False
            if la is not None and lb is not None and max(len(la), len(lb)) <= min(INTRALINE_MAX_CHARS, budget):
                budget -= max(len(la), len(lb))
                similar = difflib.SequenceMatcher(None, la, lb, autojunk=False).ratio() >= _INTRALINE_MIN_RATIO
            if similar:
                ta, tb = _intraline(la, lb)
            else:
                ta = "" if la is None else highlight(la)
                tb = "" if lb is None else highlight(lb)
            nb = None if lb is None else j1 + k + 1
            rows.append(
                _row(
                    None if la is None else i1 + k + 1, ta, "del" if la is not None else "",
                    nb, tb, "add" if lb is not None else "", anchor=anchors.get(nb, "") if nb else "",
                )
            )
    head = (
        f'<tr><th colspan="2">{html.escape(left_title)}</th><th colspan="2">{html.escape(right_title)}</th></tr>'
    )
    cols = '<colgroup><col style="width:3.2em"><col><col style="width:3.2em"><col></colgroup>'
    return f'{_CSS}<table class="tlx-diff">{cols}{head}{"".join(rows)}</table>'


def unified_diff_text(left: str, right: str, left_title: str, right_title: str) -> str:
    """A plain unified diff (rendered by `st.code`, so no markup is involved)."""
    lines = difflib.unified_diff(
        left.splitlines(), right.splitlines(), fromfile=left_title, tofile=right_title, lineterm="", n=2
    )
    return "\n".join(lines)


def kernel_lines(parsed) -> dict[int, str]:
    """Candidate-side line number of each kernel's first line -> its anchor id (kernels in the candidate only)."""
    offset = parsed.reference.count("\n")
    return {k.lineno - offset: kernel_anchor(k.name) for k in parsed.kernels if k.lineno > offset}


VIEWS = {"side by side": "side", "unified": "unified"}  # view -> its value in the URL (`diff=`)


def diff_view(parsed, *, key: str, left_title: str = "reference (Model)",
              right_title: str = "candidate (ModelNew)") -> dict:
    """The diff of a parsed program's reference and candidate (see `diff_panel`), kernels linked from the top."""
    if parsed.mode == "text":
        st.caption("The program does not parse: reference and candidate were split on text (first `import triton`).")
    names = [k.name for k in parsed.kernels]
    return diff_panel(parsed.reference, parsed.candidate, left_title, right_title, key=key,
                      anchors=kernel_lines(parsed), kernel_names=names)


def diff_panel(left: str, right: str, left_title: str, right_title: str, *, key: str,
               anchors: dict[int, str] | None = None, kernel_names: list[str] = ()) -> dict:
    """Side by side (folded, in a scrolling box; `anchors`: right-side line -> kernel anchor) or unified. The
    view (`diff=unified|side`) and `unchanged=1` live in the URL; returns those parameters for the page's link."""
    from ui import links

    n_lines = left.count("\n") + right.count("\n") + 2
    default = "side by side" if n_lines <= SIDE_BY_SIDE_MAX_LINES else "unified"
    linked = {v: k for k, v in VIEWS.items()}.get(links.param("diff") or "", default)
    cols = st.columns([2, 2, 5])
    view = cols[0].segmented_control("Diff", list(VIEWS), default=linked, key=f"{key}::view") or default
    params = {"diff": None if view == default else VIEWS[view], "unchanged": None}
    if view == "unified":
        links.sync_params(**params)
        st.code(unified_diff_text(left, right, left_title, right_title), language="diff")
        return params
    unfold = cols[1].toggle("Show unchanged lines", value=links.param("unchanged") == "1", key=f"{key}::unfold")
    params["unchanged"] = "1" if unfold else None
    links.sync_params(**params)
    anchors = anchors or {}
    if anchors:
        jumps = " · ".join(f'<a href="#{anchor}">{html.escape(name)}</a>'
                           for name in kernel_names for anchor in [kernel_anchor(name)] if anchor in anchors.values())
        st.html(f'<div style="font-size:13px">Jump to kernel: {jumps}</div>')
    with st.container(height=DIFF_HEIGHT_PX if n_lines > 60 else "content"):
        st.html(side_by_side_html(left, right, left_title, right_title, fold=not unfold, anchors=anchors))
    return params
