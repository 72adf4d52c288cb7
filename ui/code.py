"""Program text views: a side-by-side reference/candidate diff as escaped HTML, with a unified-diff fallback.

All program text comes from the dataset and is untrusted: every piece of it goes through `html.escape` before it
is placed in markup, and the fallback uses `st.code`, which Streamlit renders as text.
"""

from __future__ import annotations

import difflib
import html

import streamlit as st

# Past this many lines (both sides together) the side-by-side table gets heavy: show a unified diff instead.
SIDE_BY_SIDE_MAX_LINES = 1500
# Intraline highlighting only for line pairs this similar (otherwise whole-line colouring reads better).
_INTRALINE_MIN_RATIO = 0.75

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


def _row(n_a, text_a, cls_a, n_b, text_b, cls_b, row_cls="") -> str:
    na = "" if n_a is None else str(n_a)
    nb = "" if n_b is None else str(n_b)
    return (
        f'<tr class="{row_cls}"><td class="n">{na}</td><td class="t {cls_a}">{text_a}</td>'
        f'<td class="n">{nb}</td><td class="t {cls_b}">{text_b}</td></tr>'
    )


def side_by_side_html(left: str, right: str, left_title: str, right_title: str) -> str:
    """A two-column diff table (line numbers, changed lines coloured), all text HTML-escaped."""
    a, b = left.splitlines(), right.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                text = html.escape(a[i1 + k])
                rows.append(_row(i1 + k + 1, text, "", j1 + k + 1, text, "", "eq"))
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            la = a[i1 + k] if i1 + k < i2 else None
            lb = b[j1 + k] if j1 + k < j2 else None
            if la is not None and lb is not None and (
                difflib.SequenceMatcher(None, la, lb, autojunk=False).ratio() >= _INTRALINE_MIN_RATIO
            ):
                ta, tb = _intraline(la, lb)
            else:
                ta = "" if la is None else html.escape(la)
                tb = "" if lb is None else html.escape(lb)
            rows.append(
                _row(
                    None if la is None else i1 + k + 1, ta, "del" if la is not None else "",
                    None if lb is None else j1 + k + 1, tb, "add" if lb is not None else "",
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


def show_diff(left: str, right: str, left_title: str = "reference (Model)", right_title: str = "candidate (ModelNew)"):
    """Render the diff: side by side when small enough, else a unified diff."""
    n_lines = left.count("\n") + right.count("\n") + 2
    if n_lines <= SIDE_BY_SIDE_MAX_LINES:
        st.html(side_by_side_html(left, right, left_title, right_title))
    else:
        st.caption(f"{n_lines:,} lines: showing a unified diff instead of the side-by-side view.")
        st.code(unified_diff_text(left, right, left_title, right_title), language="diff")
