"""Number formats and Markdown tables of the report."""

from __future__ import annotations


def fmt_rps(x):
    return "-" if x is None else "{:,.0f}".format(x)


def fmt_ratio(x):
    return "-" if x is None else "%.2fx" % x


def fmt_num(x, digits=1):
    return "-" if x is None else "{:,.{d}f}".format(x, d=digits)


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)
