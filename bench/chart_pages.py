#!/usr/bin/env python3
"""Cuts one page per chart kind out of perfplan report.html files, for screenshots.

usage: chart_pages.py OUT_DIR [--prefer KIND=TEXT ...] REPORT.html [REPORT.html ...]

Writes OUT_DIR/<kind>.html (the first chart of each kind found, on a white page of the
chart's own size) and prints `<kind> <width> <height>` per page, for chromium's
--window-size. Kinds are told by the chart's <title>; `--prefer KIND=TEXT` takes the
first chart of that kind whose title holds TEXT, when there is one. Standard library only.
"""
import html
import re
import sys

KINDS = [
    ("sweep", re.compile(r" vs (concurrency|request rate)")),
    ("operating-point", re.compile(r"vs output throughput \(one point per tier\)")),
    ("cdf", re.compile(r"^TTFT CDF$")),
    ("side-by-side", re.compile(r"side by side$")),
    ("timeline", re.compile(r": requests$")),
    ("over-time", re.compile(r": (throughput and in flight|TTFT per slice)")),
    ("server-gauges", re.compile(r": server")),
    ("sla-search", re.compile(r"^SLA search: ")),
]
SVG = re.compile(r"<svg\b.*?</svg>", re.S)
TITLE = re.compile(r"<title>(.*?)</title>", re.S)
VIEWBOX = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)"')


def main() -> int:
    out, args = sys.argv[1], sys.argv[2:]
    prefer, reports = {}, []
    while args:
        arg = args.pop(0)
        if arg == "--prefer" and args:
            kind, _, text = args.pop(0).partition("=")
            prefer[kind] = text
        else:
            reports.append(arg)
    found, preferred = {}, {}
    for path in reports:
        with open(path, encoding="utf-8") as f:
            page = f.read()
        for svg in SVG.findall(page):
            title = TITLE.search(svg)
            if not title:
                continue
            name = html.unescape(title.group(1))
            for kind, rule in KINDS:
                if not rule.search(name):
                    continue
                found.setdefault(kind, svg)
                if kind in prefer and prefer[kind] in name:
                    preferred.setdefault(kind, svg)
    found.update(preferred)
    for kind, svg in found.items():
        box = VIEWBOX.search(svg)
        w, h = (int(float(box.group(1))), int(float(box.group(2)))) if box else (1000, 400)
        with open(f"{out}/{kind}.html", "w", encoding="utf-8") as f:
            f.write(
                '<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
                "body{margin:0;background:#fff}</style></head><body>"
                f"{svg}</body></html>"
            )
        print(kind, w, h)
    missing = [k for k, _ in KINDS if k not in found]
    if missing:
        print("no chart of kind: " + ", ".join(missing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
