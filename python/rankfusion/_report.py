"""How a :class:`rankfusion.Comparison` reads: the text table (the command's output), LaTeX, the
self-contained HTML report and its matplotlib figures.

The report is one HTML file with nothing to fetch: its style is inline and each figure is an
SVG image inside it (a ``data:`` URI; matplotlib writes text as paths, so no font is needed).
matplotlib (the ``report`` extra) is imported only for the figures.
"""

from __future__ import annotations

import base64
import html as _html
import io
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from ._compare import ComparedPair, Comparison

_SUPERSCRIPTS = dict(zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖᑫʳˢᵗᵘᵛʷˣʸᶻ"))
WIN, LOSS, TIE = "#2e7d32", "#c62828", "#9e9e9e"
_EXTREMES = 5  # queries listed as the largest wins and losses


# --- numbers ----------------------------------------------------------------------------------


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _signed(v: float) -> str:
    return f"{v:+.4f}"


def _effect(d: Optional[float]) -> str:
    return "-" if d is None else f"{d:+.2f}"


def _ci(ci: Optional[Tuple[float, float]]) -> str:
    return "-" if ci is None else f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"


def _ci_label(cmp: "Comparison") -> str:
    return f"{cmp.confidence * 100:g}% CI"


def _wtl(r: "ComparedPair") -> str:
    return f"{r.wins}/{r.ties}/{r.losses}"


def describe(cmp: "Comparison") -> str:
    """The comparison's settings in a sentence."""
    n = len(cmp.queries)
    if cmp.test == "randomization":
        how = (
            f"randomization test, exact (all 2^{n} sign vectors)"
            if cmp.exact
            else f"randomization test, {cmp.permutations:,} random sign vectors (seed {cmp.seed})"
        )
    elif cmp.test == "t":
        how = "paired t-test"
    else:
        how = f"paired bootstrap, {cmp.permutations:,} resamples (seed {cmp.seed})"
    tests = len(cmp.pairs)
    correction = "no correction" if cmp.correction == "none" else f"{cmp.correction} correction"
    return (
        f"{len(cmp.names)} runs, {n} queries; {how}; {correction} over {tests} "
        f"test{'s' if tests != 1 else ''}; alpha {cmp.alpha:g}"
    )


def _columns(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _pair_rows(cmp: "Comparison") -> List[List[str]]:
    header = ["system", "baseline", "metric", "Δ", "p", f"p ({cmp.correction})", "d"]
    rows = [header + [_ci_label(cmp), "W/T/L"]]
    for r in cmp.pairs:
        rows.append(
            [
                f"{cmp.letters[r.system]} {r.system}",
                f"{cmp.letters[r.baseline]} {r.baseline}",
                r.metric,
                _signed(r.delta),
                _p(r.p),
                _p(r.p_corrected) + ("*" if r.significant else " "),
                _effect(r.effect_size),
                _ci(r.ci),
                _wtl(r),
            ]
        )
    return rows


def text(cmp: "Comparison") -> str:
    """The table the command prints."""
    means = [["", "run", *cmp.metrics]]
    for name in cmp.names:
        row = [cmp.letters[name], name]
        for m in cmp.metrics:
            marks = "".join(
                _SUPERSCRIPTS.get(cmp.letters[o], "^" + cmp.letters[o])
                for o in cmp.better_than(m, name)
            )
            row.append(f"{cmp.means[m][name]:.4f}{marks}")
        means.append(row)
    return (
        f"{describe(cmp)}\n\n"
        + _columns(means, [False, False] + [False] * len(cmp.metrics))
        + f"\n(superscripts: the runs this one is significantly better than, corrected p <= "
        f"{cmp.alpha:g})\n\n"
        + _columns(_pair_rows(cmp), [False, False, False, True, True, True, True, False, True])
        + "\n(* significant; d: paired Cohen's d; Δ = system - baseline; W/T/L: queries the "
        "system wins, ties, loses)\n"
    )


# --- LaTeX ------------------------------------------------------------------------------------

_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(s: str) -> str:
    return "".join(_LATEX.get(c, c) for c in str(s))


def latex(cmp: "Comparison") -> str:
    """Two booktabs tables: the means with superscripts, and the tests."""
    cols = "r" * len(cmp.metrics)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\begin{{tabular}}{{cl{cols}}}",
        r"\toprule",
        " & Run & " + " & ".join(_tex(m) for m in cmp.metrics) + r" \\",
        r"\midrule",
    ]
    for name in cmp.names:
        cells = []
        for m in cmp.metrics:
            marks = "".join(cmp.letters[o] for o in cmp.better_than(m, name))
            cells.append(f"{cmp.means[m][name]:.4f}" + (f"$^{{{marks}}}$" if marks else ""))
        lines.append(f"{cmp.letters[name]} & {_tex(name)} & " + " & ".join(cells) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{_tex(describe(cmp))}. Superscripts: the runs a run is significantly "
        rf"better than (corrected $p \le {cmp.alpha:g}$).}}",
        r"\end{table}",
        "",
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{lllrrrrcr}",
        r"\toprule",
        r"System & Baseline & Metric & $\Delta$ & $p$ & $p_{\mathrm{"
        + _tex(cmp.correction)
        + r"}}$ & $d$ & "
        + _tex(_ci_label(cmp))
        + r" & W/T/L \\",
        r"\midrule",
    ]
    for r in cmp.pairs:
        pc = _p(r.p_corrected)
        lines.append(
            " & ".join(
                [
                    _tex(r.system),
                    _tex(r.baseline),
                    _tex(r.metric),
                    f"${_signed(r.delta)}$",
                    _p(r.p),
                    rf"\textbf{{{pc}}}" if r.significant else pc,
                    "--" if r.effect_size is None else f"${_effect(r.effect_size)}$",
                    "--" if r.ci is None else f"$[{r.ci[0]:+.4f}, {r.ci[1]:+.4f}]$",
                    _wtl(r),
                ]
            )
            + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


# --- figures ----------------------------------------------------------------------------------


def _deltas(cmp: "Comparison", r: "ComparedPair") -> List[Tuple[Any, float, float, float]]:
    """(qid, system value, baseline value, Δ) per query, Δ descending (ties: query order)."""
    xs, ys = cmp.per_query[r.metric][r.system], cmp.per_query[r.metric][r.baseline]
    rows = [(q, xs[q], ys[q], xs[q] - ys[q]) for q in cmp.queries]
    return sorted(rows, key=lambda row: -row[3])


def figure(cmp: "Comparison", r: "ComparedPair") -> Any:
    """One test's figure: the per-query differences sorted (wins above 0, losses below, the
    extreme queries named) and their distribution with the mean and its interval."""
    from matplotlib.figure import Figure

    rows = _deltas(cmp, r)
    deltas = [row[3] for row in rows]
    colors = [WIN if v > 0 else LOSS if v < 0 else TIE for v in deltas]
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[3, 1])
    positions = range(1, len(deltas) + 1)
    left.bar(positions, deltas, width=1.0, color=colors, linewidth=0)
    left.axhline(0.0, color="#424242", linewidth=0.8)
    left.set_xlim(0.5, len(deltas) + 0.5)
    left.set_title(f"{r.system} vs {r.baseline}: {r.metric} per query, sorted by Δ", fontsize=10)
    left.set_ylabel(f"Δ {r.metric}")
    left.set_xlabel(f"queries ({r.wins} wins, {r.ties} ties, {r.losses} losses)")
    span = max((abs(v) for v in deltas), default=0.0) or 1.0
    left.set_ylim(-1.18 * span, 1.18 * span)
    # The largest win and loss named (the report lists more below the figure).
    named = [i for i in (0, len(rows) - 1) if deltas[i] != 0]
    for i in sorted(set(named)):
        v = deltas[i]
        left.annotate(
            str(rows[i][0]),
            (i + 1, v),
            xytext=(0, 3 if v > 0 else -3),
            textcoords="offset points",
            ha="left" if i == 0 else "right",  # inside the axes at both ends
            va="bottom" if v > 0 else "top",
            fontsize=7,
            color=colors[i],
        )
    bins = min(30, max(5, len(deltas) // 8))
    right.hist(deltas, bins=bins, color="#607d8b", edgecolor="white", linewidth=0.5)
    right.axvline(0.0, color="#424242", linewidth=0.8)
    mean_d = sum(deltas) / len(deltas)
    right.axvline(mean_d, color="#1565c0", linestyle="--", linewidth=1.2, label="mean Δ")
    if r.ci is not None:
        right.axvspan(r.ci[0], r.ci[1], color="#1565c0", alpha=0.15, label=_ci_label(cmp))
    right.set_title("distribution of Δ", fontsize=10)
    right.set_xlabel(f"Δ {r.metric}")
    right.set_ylabel("queries")
    right.legend(fontsize=7, loc="upper left", framealpha=0.9, edgecolor="none")
    for ax in (left, right):
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    return fig


def _svg_uri(fig: Any) -> str:
    import matplotlib

    out = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "rankfusion", "svg.fonttype": "path"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(out.getvalue()).decode("ascii")


# --- HTML -------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #212121; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #e0e0e0; }
h3 { font-size: 1.05rem; margin-bottom: 0.3rem; }
p.settings, p.note { color: #616161; margin-top: 0.2rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 0.9rem; }
th, td { padding: 0.25rem 0.7rem; text-align: right; border-bottom: 1px solid #eeeeee; }
th { background: #fafafa; border-bottom: 2px solid #bdbdbd; }
td.name, th.name { text-align: left; }
tr.significant td { background: #f1f8e9; }
tr.significant.worse td { background: #ffebee; }
sup { color: #2e7d32; font-weight: 600; }
.stats { font-size: 0.9rem; color: #424242; }
img { width: 100%; height: auto; display: block; margin: 0.4rem 0; }
.extremes { display: flex; gap: 2rem; flex-wrap: wrap; }
.extremes table caption { text-align: left; font-weight: 600; padding-bottom: 0.2rem; }
.win { color: #2e7d32; } .loss { color: #c62828; }
footer { margin-top: 3rem; color: #9e9e9e; font-size: 0.8rem; }
"""


def _e(value: Any) -> str:
    return _html.escape(str(value))


def _means_table(cmp: "Comparison") -> str:
    head = "".join(f"<th>{_e(m)}</th>" for m in cmp.metrics)
    rows = []
    for name in cmp.names:
        cells = []
        for m in cmp.metrics:
            marks = "".join(cmp.letters[o] for o in cmp.better_than(m, name))
            sup = f"<sup>{_e(marks)}</sup>" if marks else ""
            cells.append(f"<td>{cmp.means[m][name]:.4f}{sup}</td>")
        rows.append(
            f'<tr><td class="name">{_e(cmp.letters[name])}</td>'
            f'<td class="name">{_e(name)}</td>{"".join(cells)}</tr>'
        )
    return (
        f'<table><thead><tr><th class="name"></th><th class="name">run</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _pairs_table(cmp: "Comparison") -> str:
    head = _pair_rows(cmp)[0]
    heads = "".join(
        f'<th class="name">{_e(h)}</th>' if i < 3 else f"<th>{_e(h)}</th>"
        for i, h in enumerate(head)
    )
    rows = []
    for k, r in enumerate(cmp.pairs):
        klass = ""
        if r.significant:
            klass = ' class="significant worse"' if r.delta < 0 else ' class="significant"'
        rows.append(
            f"<tr{klass}>"
            f'<td class="name"><a href="#test-{k}">{_e(cmp.letters[r.system])} {_e(r.system)}</a>'
            f'</td><td class="name">{_e(cmp.letters[r.baseline])} {_e(r.baseline)}</td>'
            f'<td class="name">{_e(r.metric)}</td><td>{_signed(r.delta)}</td><td>{_p(r.p)}</td>'
            f"<td>{_p(r.p_corrected)}{'*' if r.significant else ''}</td>"
            f"<td>{_effect(r.effect_size)}</td><td>{_ci(r.ci)}</td><td>{_wtl(r)}</td></tr>"
        )
    return f"<table><thead><tr>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _extremes(cmp: "Comparison", r: "ComparedPair") -> str:
    rows = _deltas(cmp, r)
    wins = [row for row in rows[:_EXTREMES] if row[3] > 0]
    losses = [row for row in reversed(rows[-_EXTREMES:]) if row[3] < 0]

    def table(caption: str, items: List[Tuple[Any, float, float, float]], klass: str) -> str:
        if not items:
            return f'<table><caption class="{klass}">{caption}: none</caption></table>'
        body = "".join(
            f'<tr><td class="name">{_e(q)}</td><td>{x:.4f}</td><td>{y:.4f}</td>'
            f'<td class="{klass}">{_signed(d)}</td></tr>'
            for q, x, y, d in items
        )
        return (
            f'<table><caption class="{klass}">{caption}</caption><thead><tr>'
            f'<th class="name">query</th><th>{_e(r.system)}</th><th>{_e(r.baseline)}</th>'
            f"<th>Δ</th></tr></thead><tbody>{body}</tbody></table>"
        )

    return (
        '<div class="extremes">'
        + table("Largest wins", wins, "win")
        + table("Largest losses", losses, "loss")
        + "</div>"
    )


def html_page(cmp: "Comparison", images: Dict[int, str]) -> str:
    """The page, with `images[k]` the `data:` URI of test k's figure."""
    from ._version import __version__

    sections = []
    for k, r in enumerate(cmp.pairs):
        verdict = "significant" if r.significant else "not significant"
        sections.append(
            f'<section id="test-{k}"><h3>{_e(cmp.letters[r.system])} {_e(r.system)} vs '
            f"{_e(cmp.letters[r.baseline])} {_e(r.baseline)}: {_e(r.metric)}</h3>"
            f'<p class="stats">Δ = {_signed(r.delta)} ({cmp.means[r.metric][r.system]:.4f} vs '
            f"{cmp.means[r.metric][r.baseline]:.4f}); p = {_p(r.p)}, corrected p = "
            f"{_p(r.p_corrected)} ({verdict} at {cmp.alpha:g}); d = {_effect(r.effect_size)}; "
            f"{_e(_ci_label(cmp))} {_ci(r.ci)}; W/T/L {_wtl(r)}</p>"
            f'<img alt="per-query Δ of {_e(r.system)} vs {_e(r.baseline)} on {_e(r.metric)}" '
            f'src="{images[k]}">'
            f"{_extremes(cmp, r)}</section>"
        )
    title = f"rankfusion compare: {len(cmp.names)} runs"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{_e(title)}</title>'
        f"<style>{_STYLE}</style></head><body>"
        f'<h1>{_e(title)}</h1><p class="settings">{_e(describe(cmp))}</p>'
        f"<h2>Means</h2>{_means_table(cmp)}"
        f'<p class="note">Superscripts: the runs a run is significantly better than '
        f"(corrected p &le; {cmp.alpha:g}).</p>"
        f"<h2>Tests</h2>{_pairs_table(cmp)}"
        f'<p class="note">* significant after the correction; Δ = system mean &minus; baseline '
        f"mean; d: paired Cohen's d; W/T/L: queries the system wins, ties, loses.</p>"
        f"<h2>Per query</h2>{''.join(sections)}"
        f"<footer>rankfusion {_e(__version__)} &middot; {_e(cmp.test)} test, seed "
        f"{cmp.seed}</footer></body></html>\n"
    )


def html(cmp: "Comparison") -> str:
    """The self-contained report (see the module's doc)."""
    images = {}
    for k, r in enumerate(cmp.pairs):
        fig = figure(cmp, r)
        images[k] = _svg_uri(fig)
    return html_page(cmp, images)
