#!/bin/bash
# The web UI carries no inline script or style (the CSP forbids both, and
# they are how injected markup would act) and loads nothing from outside the
# box.  The checker is shown to fail on each kind of inline script or style
# first, so this test cannot pass by checking nothing.
. "$(dirname "$0")/lib.sh"
tb_setup
CHECK="$top_srcdir/tests/webui/check-no-inline.sh"
W="$top_srcdir/webui"

n_files=$(find "$W" -type f \( -name '*.html' -o -name '*.js' \) | wc -l)
ok $((n_files < 8)) "webui/ has its pages ($n_files HTML and JS files)"

bad() { # NAME EXT CONTENT: the checker must refuse it
    mkdir -p "$TB_TMP/bad-$1"
    printf '%s\n' "$3" >"$TB_TMP/bad-$1/x.$2"
    "$CHECK" "$TB_TMP/bad-$1" >/dev/null
    is "$?" 1 "the checker refuses $1"
}
bad "an inline script block" html '<p>x</p><script>alert(1)</script>'
bad "an inline module" html '<script type="module">import "./a.js"</script>'
bad "an event attribute" html '<button onclick="go()">go</button>'
bad "a javascript: URL" html '<a href="javascript:go()">go</a>'
bad "eval" js 'const x = eval("1+1");'
bad "new Function" js 'const f = new Function("return 1");'
bad "a string timer" js 'setTimeout("go()", 10);'
bad "innerHTML" js 'el.innerHTML = userText;'
# The CSP has no 'unsafe-inline' for styles either (an injected <style> could
# hide a warning or fake a button): the UI must not need it.
bad "an inline style block" html '<style>p { color: red }</style>'
bad "a style attribute" html '<p style="color: red">x</p>'
bad "a style attribute set by script" js 'e.setAttribute("style", "color: red");'
bad "a style attribute given to el()" js 'el("p", { style: "color: red", text: "x" });'
bad "a style element made by script" js 'document.head.append(document.createElement("style"));'
mkdir -p "$TB_TMP/good"
printf '%s\n' '<script type="module" src="/js/app.js"></script>' >"$TB_TMP/good/x.html"
"$CHECK" "$TB_TMP/good" >/dev/null
is "$?" 0 "the checker accepts a script loaded from a file"

# The plugins' pages: the example and every NAME.ui.js under plugins/.
PAGES=("$top_srcdir/pdk/example/example.ui.js" "$top_srcdir"/plugins/*/*.ui.js)
ok $((${#PAGES[@]} < 3)) "the plugins' pages are found (${#PAGES[@]}: ${PAGES[*]##*/})"
out=$("$CHECK" "$W" "${PAGES[@]}")
is "$?" 0 "no inline script anywhere in webui/ or the plugins' pages"
[ -z "$out" ] || diag "$out"

ext=$(grep -rnoE '(src|href)="(https?:)?//[^"]*"|(import|from)[[:space:]]*["'\''](https?:)?//|fetch\(["'\''`](https?:)?//' \
    "$W" "${PAGES[@]}")
is "$ext" "" "no resource is loaded from outside the box"

# Two plugin pages rendered with a stub DOM and canned replies
# (tests/webui/page_render.mjs), for states a live daemon reaches only after
# minutes or by chance.  OCSP: a good answer that is no longer sent
# ("expired": it ran out while the refresh failed or hung; "not_stapled")
# must read as a warning with its reason, first and in red, not as a
# neutral word next to a good one.
# node comes from packaging/install-deps.sh; without it these checks fail.
if command -v node >/dev/null; then
    R="$top_srcdir/tests/webui/page_render.mjs"
    r=$(node "$R" ocsp "$top_srcdir/plugins/ocsp/ocsp.ui.js")
    is "$(jq -r '[.rows[].name] | join(" ")' <<<"$r")" "b-expired c-not-stapled a-good" \
        "OCSP page: certificates without a staple sent come first"
    is "$(jq -r '[.rows[] | "\(.class)/\(.bold_red | join(","))"] | join(" ")' <<<"$r")" \
        "bad/EXPIRED - no staple is sent bad/NOT STAPLED - no staple is sent /" \
        "OCSP page: their rows are marked and say in bold red that no staple is sent"
    like "$(jq -r '.rows[] | select(.name == "b-expired") | .status' <<<"$r")" \
        "ran out and no fresh one came \(served until " \
        "OCSP page: an expired staple says why, and until when it was served"
    is "$(jq -r '.summary | "\(.class): \(.text)"' <<<"$r")" \
        "bad: 3 certificate(s), 1 stapled, 2 good answer(s) no longer sent. Run 3, no check planned." \
        "OCSP page: the summary counts them, in red"
    # Bench: a stored h2 run of 100 requests, 90 complete, 2 failed, 8 not
    # sent (refused after the run stopped sending): the result table must
    # show all three, so that its numbers add up to what was asked for.
    r=$(node "$R" bench "$top_srcdir/plugins/bench/bench.ui.js")
    is "$(jq -r '[.head[1:5][]] | join("/")' <<<"$r")" "Complete/Failed/Retried/Not sent" \
        "bench page: the result table has a Not sent column after Retried"
    is "$(jq -r '[.rows[0][0:6][]] | join(" ")' <<<"$r")" "h2 90 2 5 8 100.0" \
        "bench page: it shows the run's not_sent (8): 90 + 2 + 8 = the 100 asked for"
else
    ok 1 "node renders the plugins' pages (not found: run packaging/install-deps.sh)"
fi
done_testing
