"""Plotly figures for the pages: latency distributions (log scale), failure rates and error-type bars."""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

_SOURCE_COLOURS = {"static": "#4C78A8", "triaged": "#54A24B", "measured": "#F58518"}  # by a basis's first word

_HEIGHT = 320


def _layout(fig: go.Figure, height: int = _HEIGHT, top: int = 40) -> go.Figure:
    fig.update_layout(height=height + top - 40, margin=dict(l=10, r=10, t=top, b=10), bargap=0.05)
    return fig


def plain(value) -> str:
    """A data value as Plotly text: Plotly renders `<a href>`, `<b>` and friends in labels, so escape them."""
    return html.escape(str(value))


def non_finite_note(count: int) -> str:
    """What the page says under a chart that left out labels that are not numbers it can draw."""
    return (f"{count:,} label{' is' if count == 1 else 's are'} not finite (inf or NaN) and left out of the charts.")


def show(fig: go.Figure, key: str | None = None) -> None:
    st.plotly_chart(fig, width="stretch", key=key)


def quantile_curve(quantiles, unit: str) -> go.Figure:
    """The label's quantile function (q against y, log x): a coarse ECDF from the store's quantile table."""
    # q = 0 (the minimum) is left out: the share of labels at or below the minimum is 1/n, not 0
    points = [(r["y"], r["q"]) for r in quantiles.to_pylist() if r["y"] is not None and r["y"] > 0 and r["q"] > 0]
    fig = go.Figure(
        go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines+markers", line_shape="linear",
                   marker_color="#4C78A8", hovertemplate="%{y:.0%} of labels ≤ %{x:.4g}<extra></extra>")
    )
    fig.update_xaxes(type="log", title=f"label ({unit}, log scale)")
    fig.update_yaxes(tickformat=".0%", title="share of rows with a label", range=[0, 1.02])
    fig.update_layout(title="Label distribution (quantiles, all problems)")
    return _layout(fig)


def log_histogram(bins, unit: str) -> go.Figure:
    """Rows per log10 bin of the label (bin_lo, bin_hi, rows from the queries layer), on a log x axis."""
    lo = np.asarray(bins.column("bin_lo").to_pylist(), dtype=float)
    hi = np.asarray(bins.column("bin_hi").to_pylist(), dtype=float)
    fig = go.Figure(
        go.Bar(x=np.sqrt(lo * hi), y=bins.column("rows").to_pylist(), width=hi - lo, marker_color="#4C78A8",
               customdata=np.stack([lo, hi], axis=-1),
               hovertemplate="%{customdata[0]:.4g} to %{customdata[1]:.4g}: %{y:,} rows<extra></extra>")
    )
    fig.update_xaxes(type="log", title=f"label ({unit}, log scale)")
    fig.update_yaxes(title="rows")
    fig.update_layout(title="Label distribution (all problems)")
    return _layout(fig)


_MIN_TICKS = 3


def _log_ticks(lo: float, hi: float) -> dict:
    """Tick positions/labels for an axis that holds log10 values: 1-2-5 steps within the range, or five evenly
    spaced ticks when the range is too narrow for three of those."""
    ticks = [e + math.log10(m) for e in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo - 1e-9 <= t <= hi + 1e-9]
    if len(ticks) < _MIN_TICKS:
        ticks = [float(t) for t in np.linspace(lo, hi, 5)]
    digits = max(3, 2 + math.ceil(-math.log10(max(10**hi - 10**lo, 1e-300) / max(10**hi, 1e-300))))
    return dict(tickvals=ticks, ticktext=[f"{10**t:.{digits}g}" for t in ticks])


_MAX_ECDF_POINTS = 500


def ecdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, share of values <= x) of sorted `values`: the i-th smallest at i/n (the fastest at 1/n, never 0);
    past `_MAX_ECDF_POINTS` values, that many evenly spaced shares with their inverted-CDF quantiles."""
    n = len(values)
    if n <= _MAX_ECDF_POINTS:
        return values, np.arange(1, n + 1) / n
    probs = np.linspace(1 / n, 1, _MAX_ECDF_POINTS)
    return np.quantile(values, probs, method="inverted_cdf"), probs


def _ecdf_trace(values: np.ndarray, name: str) -> go.Scatter:
    """An ECDF on at most `_MAX_ECDF_POINTS` points, so big problems stay light."""
    x, probs = ecdf_points(values)
    return go.Scatter(x=x, y=probs, mode="lines+markers" if len(x) <= 50 else "lines", name=name, line_shape="hv",
                      hovertemplate="%{y:.0%} ≤ %{x:.4g}<extra>%{fullData.name}</extra>")


def _box_trace(values: np.ndarray, name: str) -> go.Box:
    """A box from precomputed quartiles and 1.5 IQR whiskers (no per-point payload)."""
    q1, med, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    lo_fence = values[values >= q1 - 1.5 * (q3 - q1)].min()
    hi_fence = values[values <= q3 + 1.5 * (q3 - q1)].max()
    return go.Box(name=name, q1=[q1], median=[med], q3=[q3], lowerfence=[lo_fence], upperfence=[hi_fence],
                  orientation="h", y=[name])


def latency_distribution(table, unit: str, kind: str = "histogram") -> go.Figure:
    """One problem's labels (`y` of rows that passed) as histogram, ECDF or box on a log scale; labels that are not
    finite (inf, NaN) are left out, and the title counts them."""
    df = table.select(["y", "split"]).to_pandas()
    finite = np.isfinite(df["y"].to_numpy(dtype=float))
    left_out = int((~finite & df["y"].notna().to_numpy()).sum())
    df = df[finite & (df["y"] > 0)]
    label = f"label ({unit}, log scale)"
    fig = go.Figure()
    if kind in ("ecdf", "box"):
        for split, part in df.groupby("split"):
            values = np.sort(part["y"].to_numpy(dtype=float))
            fig.add_trace(_ecdf_trace(values, str(split)) if kind == "ecdf" else _box_trace(values, str(split)))
        fig.update_xaxes(type="log", title=label)
        if kind == "ecdf":
            fig.update_yaxes(tickformat=".0%", title="share of passing rows")
    else:
        # Plotly bins in data space; bin log10(y) instead and label the axis in the label's unit.
        logs = np.log10(df["y"].to_numpy(dtype=float))
        lo, hi = (float(logs.min()), float(logs.max())) if len(logs) else (0.0, 1.0)
        if hi - lo < 1e-6:
            lo, hi = lo - 0.1, hi + 0.1
        edges = np.linspace(lo, hi, 41)
        for split, part in df.groupby("split"):
            counts, _ = np.histogram(np.log10(part["y"].to_numpy(dtype=float)), bins=edges)
            fig.add_bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=edges[1] - edges[0], name=str(split),
                        opacity=0.8, customdata=10 ** edges[:-1],
                        hovertemplate="from %{customdata:.4g}: %{y} rows<extra>%{fullData.name}</extra>")
        fig.update_layout(barmode="stack")
        fig.update_xaxes(title=label, **_log_ticks(lo, hi))
        fig.update_yaxes(title="rows")
    title = f"Distribution of the label ({len(df):,} passing rows" + (
        f"; {left_out:,} not finite, left out)" if left_out else ")")
    fig.update_layout(title=title, legend_title_text="split")
    return _layout(fig)


def rate_bars(labels, rates, counts, title: str) -> go.Figure:
    """Horizontal bars of failure rates (0..1) with row counts in the hover."""
    fig = go.Figure(
        go.Bar(
            x=list(rates), y=[plain(x) for x in labels], orientation="h", customdata=list(counts),
            hovertemplate="%{y}: %{x:.1%} of %{customdata:,} rows<extra></extra>", marker_color="#E45756",
        )
    )
    fig.update_xaxes(tickformat=".0%", range=[0, 1])
    fig.update_yaxes(automargin=True)  # whole category names
    fig.update_layout(title=title, xaxis_title="failure rate")
    return _layout(fig, height=max(180, 60 + 28 * len(list(labels))))


def count_bars(labels, counts, title: str, color=None) -> go.Figure:
    """Horizontal bars of counts, largest on top; `color` optionally groups them by what each count rests on
    ("static", "triaged on CPU (torch X, sm_90)", "measured on <GPU>": coloured by the first word)."""
    labels, counts = [plain(x) for x in labels], list(counts)
    groups = [plain(c) for c in color] if color is not None else [""] * len(labels)
    fig = go.Figure()
    for group in dict.fromkeys(groups):
        mine = [i for i, g in enumerate(groups) if g == group]
        fig.add_bar(x=[counts[i] for i in mine], y=[labels[i] for i in mine], orientation="h", name=group or None,
                    marker_color=_SOURCE_COLOURS.get(group.split(" ")[0], "#4C78A8"), showlegend=color is not None,
                    hovertemplate="%{y}: %{x:,} rows<extra>" + (group or "") + "</extra>")
    # the legend in a row above the bars, never over them (a narrow chart put it on the longest bar)
    fig.update_layout(barmode="stack", legend_title_text="rests on" if color is not None else None,
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0))
    fig.update_yaxes(categoryorder="total ascending", title=None, automargin=True)  # whole category names
    fig.update_xaxes(title="rows")
    fig.update_layout(title=title)
    return _layout(fig, height=max(200, 60 + 26 * len(set(labels))), top=70 if color is not None else 40)
