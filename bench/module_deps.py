#!/usr/bin/env python3
"""Count `crate::<module>` references between perfplan's top-level modules.

Usage: bench/module_deps.py [SRC_DIR]   (default: src)

Prints one line per (from, to) pair: the number of references from files under
`src/<from>/` (or `src/<from>.rs`) to `crate::<to>`, counting every path in code: `use
crate::x::...`, each top-level item of a `use crate::{a, b::c}` group, and fully
qualified paths such as `crate::x::f()`. Comments and string literals are skipped. The
architecture test (tests/architecture.rs) reads the same paths to hold DESIGN.md's
"Never" list; this script only counts, for before/after comparisons.
"""
import collections
import os
import re
import sys


def strip(text):
    """Blank out comments and string/char literals, keeping line structure."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j + 1))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or (c == "'" and text.startswith("'\\", i)):
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[i:])
            if m:
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def group_heads(body):
    """Top-level first segments of a `{a, b::c, d::{e, f}}` group body."""
    heads, depth, item = [], 0, ""
    for ch in body + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            head = item.strip().split("::")[0].strip()
            if head:
                heads.append(head)
            item = ""
        else:
            item += ch
    return heads


def references(code):
    """(line, module) of every `crate::module` path in stripped code."""
    refs = []
    for m in re.finditer(r"(?<![\w$])crate\s*::\s*(\{|\w+)", code):
        line = code.count("\n", 0, m.start()) + 1
        if m.group(1) == "{":
            depth, j = 1, m.end()
            while j < len(code) and depth:
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
            refs += [(line, h) for h in group_heads(code[m.end():j - 1])]
        else:
            refs.append((line, m.group(1)))
    return refs


def module_of(src, path):
    rel = os.path.relpath(path, src).split(os.sep)
    return rel[0][:-3] if len(rel) == 1 else rel[0]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    counts = collections.Counter()
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            frm = module_of(src, path)
            with open(path, encoding="utf-8") as fh:
                code = strip(fh.read())
            for _, to in references(code):
                if to != frm and to not in ("self", "super"):
                    counts[(frm, to)] += 1
    for (frm, to), n in sorted(counts.items()):
        print(f"{frm:>12} -> {to:<12} {n}")


if __name__ == "__main__":
    main()
