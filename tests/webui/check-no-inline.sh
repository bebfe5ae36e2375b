#!/bin/bash
# Fail when a web UI file carries script or style the CSP would refuse (and
# that an injection could ride on): inline <script> blocks, on* event
# attributes, javascript: URLs, eval/new Function/string timers, <style>
# blocks and style attributes (set in markup, by setAttribute or as an
# attribute of ui.js's el()).  Setting element.style.x stays allowed: the
# CSP does not govern it.  Usage: DIR|FILE...
# Prints each offending line as FILE:LINE: and exits 1 when any is found.
set -u
found=0
mapfile -t files < <(find "$@" -type f \( -name '*.html' -o -name '*.js' -o -name '*.css' \) | sort)
for f in "${files[@]}"; do
    case $f in
    *.html)
        # A <script> element without src= is inline script.
        grep -nHiE '<script([^>]*)>' "$f" | grep -viE '<script[^>]*[[:space:]]src=' && found=1
        grep -nHiE '[[:space:]]on[a-z]+[[:space:]]*=' "$f" && found=1
        grep -nHiE 'javascript:' "$f" && found=1
        grep -nHiE '<style|<[a-z][^>]*[[:space:]]style[[:space:]]*=' "$f" && found=1
        ;;
    *.js)
        grep -nHE '(^|[^A-Za-z0-9_.])eval[[:space:]]*\(|new[[:space:]]+Function[[:space:]]*\(|set(Timeout|Interval)[[:space:]]*\([[:space:]]*["'\''`]' "$f" && found=1
        grep -nHE '\.innerHTML[[:space:]]*=|insertAdjacentHTML|document\.write' "$f" && found=1
        grep -nHiE 'javascript:' "$f" && found=1
        grep -nHE 'setAttribute\([[:space:]]*["'\'']on[a-z]+' "$f" && found=1
        grep -nHE 'setAttribute\([[:space:]]*["'\'']style|[{,][[:space:]]*["'\'']?style["'\'']?[[:space:]]*:|createElement\([[:space:]]*["'\'']style|\.cssText[[:space:]]*=' "$f" && found=1
        ;;
    *.css)
        grep -nHiE 'expression\(|javascript:' "$f" && found=1
        ;;
    esac
done
exit $found
