#!/usr/bin/env bash
# Opens the HTML report of every simulator scenario in headless Chromium, fails on a
# console error or a page that does not render, and (with DOCS=1) refreshes one
# screenshot per kind of chart in docs/src/images/ (the book's). Skips (exit 0) when
# Chromium is absent, so CI can call it unconditionally.
#
#   bash bench/screenshots.sh                 # every scenario against the simulator
#   SCENARIOS="quickstart sla-search" DOCS=1 bash bench/screenshots.sh
#
# BIN: the perfplan binary (default the newer of target/release and target/debug).
# OUT: where the suites and pages go, kept (default a temporary folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z "$CHROMIUM" ]]; then
    echo "screenshots: skipped (no chromium; apt-get install chromium to run it)"
    exit 0
fi
# The newer of the release and debug builds (a stale release build would not know the
# scenarios' newest keys).
if [[ -z "${BIN:-}" ]]; then
    BIN=target/debug/perfplan
    [[ -x target/release/perfplan && target/release/perfplan -nt "$BIN" ]] && BIN=target/release/perfplan
fi
[[ -x "$BIN" ]] || { echo "screenshots: no perfplan binary (cargo build first)" >&2; exit 2; }
if [[ -n "${OUT:-}" ]]; then
    mkdir -p "$OUT"
else
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
fi
SCENARIOS=${SCENARIOS:-$(grep -l 'sim://' scenarios/*.toml scenarios/*.yaml 2>/dev/null | xargs -n1 basename | sed 's/\.[a-z]*$//')}

# One headless load of a page: a screenshot of WIDTHxHEIGHT and the browser's log.
shoot() { # page png width height log
    timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --enable-logging=stderr --v=0 --window-size="$3,$4" \
        --screenshot="$2" "file://$(realpath "$1")" >"$5" 2>&1 || true
}

console_messages() { # log -> the console lines, if any
    grep -E 'CONSOLE|Uncaught|net::ERR' "$1" | grep -v 'dbus' || true
}

# The check must be able to fail: a page with a script error has to be caught.
echo '<html><body><script>notDefined()</script></body></html>' >"$OUT/broken.html"
shoot "$OUT/broken.html" "$OUT/broken.png" 400 300 "$OUT/broken.log"
if [[ -z "$(console_messages "$OUT/broken.log")" ]]; then
    echo "screenshots: this Chromium does not log console errors; the check would prove nothing" >&2
    exit 2
fi

failed=0
reports=()
for name in $SCENARIOS; do
    plan=scenarios/$name.toml
    [[ -f "$plan" ]] || plan=scenarios/$name.yaml
    dir="$OUT/$name"
    # Gates may fail on purpose in a scenario: the page is what is checked here.
    timeout 300 "$BIN" run "$plan" --out "$dir" >"$dir.log" 2>&1 || true
    page="$dir/report.html"
    if [[ ! -s "$page" ]]; then
        echo "FAIL $name: no report.html (see $dir.log)"; failed=1; continue
    fi
    shoot "$page" "$dir/page.png" 1400 3000 "$dir/chromium.log"
    bytes=$(stat -c %s "$page")
    console_messages "$dir/chromium.log" >"$dir/console.txt"
    if [[ -s "$dir/console.txt" ]]; then
        echo "FAIL $name: console messages:"; sed 's/^/    /' "$dir/console.txt"; failed=1
    elif [[ ! -s "$dir/page.png" ]]; then
        echo "FAIL $name: no screenshot (see $dir/chromium.log)"; failed=1
    else
        echo "ok   $name: report.html $((bytes / 1024)) KiB, rendered without console messages"
    fi
    reports+=("$page")
done

if [[ -n "${DOCS:-}" && ${#reports[@]} -gt 0 ]]; then
    mkdir -p "$OUT/charts"
    # The run under the heaviest load shows its queue: the one to picture.
    python3 bench/chart_pages.py "$OUT/charts" --prefer "server-gauges=concurrency=16" \
        "${reports[@]}" | while read -r kind w h; do
        shoot "$OUT/charts/$kind.html" "docs/src/images/chart-$kind.png" "$w" "$h" "$OUT/charts/$kind.log"
        echo "docs/src/images/chart-$kind.png (${w}x${h})"
    done
fi
exit $failed
