#!/bin/bash
# The site over HTTPS with real clients: ALPN h2 and http/1.1, bodies equal
# the files, validators and 304, Range, .br/.zst/.gz siblings, security headers,
# traversal refused, HTTP/1.0 and pipelining, the plain port's 301, IPv6,
# nghttp's view of SETTINGS, metrics, and a graceful stop mid-download.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd serves the site on ports $P_HTTPS and $P_HTTP"
W="$TB_TMP/www"
C=(curl -s --cacert "$CA" --max-time 20)

# put_served NAME TEXT MTIME: write TEXT (a line) to $W/NAME dated MTIME
# (seconds since the epoch), then wait until the site serves it over $proto
# (a worker looks at a cached file again after 1 s).
put_served() {
    printf '%s\n' "$2" >"$W/$1"
    touch -d "@$3" "$W/$1"
    for _ in $(seq 50); do
        [ "$("${C[@]}" $proto "$URL/$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
# served_header NAME FIELD: the value of the response header FIELD (lower
# case) for GET $URL/NAME over $proto.
served_header() {
    "${C[@]}" $proto -D - -o /dev/null "$URL/$1" | tr -d '\r' |
        sed -n "s/^$2: //Ip"
}

# Precompressed siblings made by the real tools: brotli, zstd, gzip.
for _ in $(seq 300); do cat "$top_srcdir/plugins/site/site_files.c"; done | head -c 200000 >"$W/app.js"
brotli -q 11 -k "$W/app.js"
zstd -q -19 -k "$W/app.js"
gzip -9 -k "$W/app.js"
# The one the site sends a client that takes all three alike: the smallest,
# and on equal sizes br, then zstd, then gzip.
smallest_size=
for e in br:br zstd:zst gzip:gz; do
    n=$(stat -c %s "$W/app.js.${e#*:}")
    if [ -z "$smallest_size" ] || [ "$n" -lt "$smallest_size" ]; then
        smallest_size=$n smallest_enc=${e%:*}
    fi
done

# ---- protocols and bodies -------------------------------------------------
for proto in --http2 --http1.1; do
    want_v=$([ $proto = --http2 ] && echo 2 || echo 1.1)
    out=$("${C[@]}" $proto -o "$TB_TMP/got" -w '%{http_code} %{http_version}' "$URL/f16k.txt")
    is "$out" "200 $want_v" "$proto: 200 over HTTP/$want_v (ALPN, verified against the box's CA)"
    cmp -s "$TB_TMP/got" "$W/f16k.txt"
    ok $? "$proto: body equals the 16,127-byte file"
    "${C[@]}" $proto -o "$TB_TMP/got" "$URL/big.bin"
    cmp -s "$TB_TMP/got" "$W/big.bin"
    ok $? "$proto: 2 MB body equals the file (streamed, flow control)"
    if [ $proto = --http2 ]; then
        # Four 2 MB streams at once on one connection, with curl's large
        # window: the frames of each are interleaved, none is lost or reordered.
        out=$("${C[@]}" --http2 --parallel --parallel-max 4 -w '%{num_connects}\n' \
            -o "$TB_TMP/p1" -o "$TB_TMP/p2" -o "$TB_TMP/p3" -o "$TB_TMP/p4" \
            "$URL/big.bin" "$URL/big.bin" "$URL/big.bin" "$URL/big.bin" | paste -sd+ | bc)
        is "$out" 1 "$proto: four parallel downloads share one connection"
        n=0
        for f in p1 p2 p3 p4; do cmp -s "$TB_TMP/$f" "$W/big.bin" && n=$((n + 1)); done
        is "$n" 4 "$proto: each of the four multiplexed 2 MB bodies equals the file"
        # A cached file on ten streams at once (nghttp sends the ten
        # requests together; large windows keep each answer one DATA frame,
        # so the bodies follow each other on stdout): once the first full
        # record has told the client's record limit, DATA frames are sealed
        # where the cache holds the file, borrowing the bytes around them.
        # Ranges first (they borrow file bytes before the range), then whole
        # bodies: a byte not put back would show in either.
        nghttp -m 10 -W 30 -w 30 --timeout=10 -H 'range: bytes=1000-9999' "$URL/f16k.txt" \
            >"$TB_TMP/ng" 2>/dev/null
        cmp -s "$TB_TMP/ng" <(for i in $(seq 10); do tail -c +1001 "$W/f16k.txt" | head -c 9000; done)
        ok $? "$proto: ten multiplexed ranges of the cached 16 KB file (nghttp -m 10) are right"
        nghttp -m 10 -W 30 -w 30 --timeout=10 "$URL/f16k.txt" >"$TB_TMP/ng" 2>/dev/null
        cmp -s "$TB_TMP/ng" <(for i in $(seq 10); do cat "$W/f16k.txt"; done)
        ok $? "$proto: ten multiplexed bodies of the cached 16 KB file (nghttp -m 10) equal it"
        # Ten cached files of sizes around a TLS record's 16,384 bytes on one
        # connection at once: a record with other frames in front of a DATA
        # frame is cut full, and the end of the file goes in front of the
        # next record (site_conn_seal_cached).  Each body must come whole.
        sizes="15900 16127 16240 16300 16366 16375 16376 16384 1000 16200"
        args=()
        for s in $sizes; do
            head -c 24000 /dev/urandom | base64 -w 76 | head -c "$s" >"$W/edge$s.txt"
            args+=(-o "$TB_TMP/edge$s.got" "$URL/edge$s.txt")
        done
        for round in 1 2; do # the second round is served from the cache
            out=$("${C[@]}" --http2 --parallel --parallel-max 10 -w '%{num_connects}\n' "${args[@]}" |
                paste -sd+ | bc)
            n=0
            for s in $sizes; do cmp -s "$TB_TMP/edge$s.got" "$W/edge$s.txt" && n=$((n + 1)); done
            is "$out/$n" "1/10" "$proto: ten files of 1,000-16,384 bytes on one connection at once, round $round: each whole"
            rm -f "$TB_TMP"/edge*.got
        done
    fi
    "${C[@]}" $proto -o "$TB_TMP/got" "$URL/"
    cmp -s "$TB_TMP/got" "$W/index.html"
    ok $? "$proto: / serves index.html"

    hdrs=$("${C[@]}" $proto -D - -o /dev/null "$URL/f16k.txt" | tr -d '\r')
    like "$hdrs" "[Ss]trict-[Tt]ransport-[Ss]ecurity: max-age=[0-9]+" "$proto: HSTS from the policy"
    like "$hdrs" "[Xx]-[Cc]ontent-[Tt]ype-[Oo]ptions: nosniff" "$proto: nosniff"
    like "$hdrs" "[Rr]eferrer-[Pp]olicy: " "$proto: Referrer-Policy"
    like "$hdrs" "[Cc]ontent-[Tt]ype: text/plain" "$proto: MIME type by extension"
    etag=$(printf '%s\n' "$hdrs" | sed -n 's/^[Ee][Tt]ag: //p')
    lm=$(printf '%s\n' "$hdrs" | sed -n 's/^[Ll]ast-[Mm]odified: //p')
    like "$etag" '^"[0-9a-f]+(\.[0-9a-f]+)?-[0-9a-f]+"$' "$proto: ETag present"
    is "$("${C[@]}" $proto -H "If-None-Match: $etag" -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" \
        304 "$proto: If-None-Match gives 304"
    is "$("${C[@]}" $proto -H "If-Modified-Since: $lm" -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" \
        304 "$proto: If-Modified-Since gives 304"
    # A date after the server's clock is ignored (RFC 7232 3.3): the file is
    # sent, or a client with its clock ahead would never see a change.
    is "$("${C[@]}" $proto -H "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT" \
        -o "$TB_TMP/got" -w '%{http_code}' "$URL/f16k.txt")" \
        200 "$proto: If-Modified-Since in 2100: 200"
    cmp -s "$TB_TMP/got" "$W/f16k.txt"
    ok $? "$proto: and the whole file"
    # RFC 9110 5.3: If-None-Match sent as two field lines is one list, so
    # the current tag counts on whichever line it is (a proxy may add one).
    # curl sends each -H as a line of its own, over h2 as a header field
    # of its own (checked below from its trace).
    inm2() { "${C[@]}" $proto -H "If-None-Match: $1" -H "If-None-Match: $2" "${@:3}" "$URL/f16k.txt"; }
    if [ $proto = --http2 ]; then
        n=$(inm2 '"x"' "$etag" -v -o /dev/null 2>&1 | grep -ci '^\* .*\[if-none-match: ')
        is "$n" 2 "$proto: curl sends the two If-None-Match lines as two h2 header fields"
    fi
    is "$(inm2 '"x"' "$etag" -o /dev/null -w '%{http_code}')" 304 \
        "$proto: If-None-Match \"x\", then the current tag on a second line: 304"
    is "$(inm2 "$etag" '"x"' -o /dev/null -w '%{http_code}')" 304 \
        "$proto: the current tag on the first of two If-None-Match lines: 304"
    is "$(inm2 '"x"' '"y"' -o "$TB_TMP/got" -w '%{http_code}')" 200 \
        "$proto: two If-None-Match lines, neither the current tag: 200"
    cmp -s "$TB_TMP/got" "$W/f16k.txt"
    ok $? "$proto: and the whole file"
    # If-Modified-Since is a singleton: two different dates are no condition.
    is "$("${C[@]}" $proto -H "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT" \
        -H "If-Modified-Since: $lm" -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" 200 \
        "$proto: two different If-Modified-Since lines are ignored: 200"
    is "$("${C[@]}" $proto -H "If-Modified-Since: $lm" -H "If-Modified-Since: $lm" \
        -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" 304 \
        "$proto: the same If-Modified-Since on two lines: 304"
    # A deploy that rewrites a file twice within one second at the same size
    # makes two versions: a client holding the first must not get 304 for it,
    # nor a range of the second spliced onto it.
    put_served "twice$proto.txt" "version one" 1700000000.100000000
    e1=$(served_header "twice$proto.txt" etag)
    put_served "twice$proto.txt" "version two" 1700000000.200000000
    is "$("${C[@]}" $proto -H "If-None-Match: $e1" -w ' %{http_code}' "$URL/twice$proto.txt")" \
        "version two
 200" "$proto: the first version's ETag no longer matches after a same-second, same-size rewrite"
    is "$("${C[@]}" $proto -H "If-Range: $e1" -r 8- -w ' %{http_code}' "$URL/twice$proto.txt")" \
        "version two
 200" "$proto: nor does If-Range with it: the whole new file, not a spliced range"
    # A file put back to an older version (a backup restored, cp -p, an old
    # checkout): a client holding the newer copy sends that copy's date,
    # later than the file's.  Only the exact Last-Modified is a 304 (as
    # nginx's default), or the client would keep the newer copy for ever.
    put_served "roll$proto.txt" "new version" 1700000100
    lm_new=$(served_header "roll$proto.txt" last-modified)
    is "$lm_new" "$(LC_ALL=C date -u -d @1700000100 '+%a, %d %b %Y %H:%M:%S GMT')" \
        "$proto: Last-Modified is the newer file's mtime"
    put_served "roll$proto.txt" "old version" 1700000000
    is "$("${C[@]}" $proto -H "If-Modified-Since: $lm_new" -w ' %{http_code}' "$URL/roll$proto.txt")" \
        "old version
 200" "$proto: after a rollback, If-Modified-Since of the newer copy gets the older file"
    lm_old=$(LC_ALL=C date -u -d @1700000000 '+%a, %d %b %Y %H:%M:%S GMT')
    is "$("${C[@]}" $proto -H "If-Modified-Since: $lm_old" -o /dev/null -w '%{http_code}' \
        "$URL/roll$proto.txt")" 304 "$proto: and its own Last-Modified still gets 304"
    # A download resumed with Range and If-Match or If-Unmodified-Since
    # (RFC 9110 13.1.1, 13.1.4): once the file changed (here to another of
    # the same size) the answer is 412, never a range of the new file for
    # the client to splice onto the old part.
    put_served "resume$proto.txt" "first version" 1700000200
    e1=$(served_header "resume$proto.txt" etag)
    lm1=$(served_header "resume$proto.txt" last-modified)
    rq() { "${C[@]}" $proto -r 6- -w ' %{http_code}' "$@" "$URL/resume$proto.txt"; }
    is "$(rq -H "If-Match: $e1")" "version
 206" "$proto: If-Match with the current tag: the range"
    is "$(rq -H "If-Unmodified-Since: $lm1")" "version
 206" "$proto: If-Unmodified-Since its Last-Modified: the range"
    is "$(rq -H "If-Match: W/$e1" -o /dev/null)" " 412" \
        "$proto: If-Match compares strongly, a weak tag never matches: 412"
    is "$(rq -H "If-Unmodified-Since: not a date")" "version
 206" "$proto: an If-Unmodified-Since that is no date is ignored"
    put_served "resume$proto.txt" "other version" 1700000300
    is "$(rq -H "If-Match: $e1" -o /dev/null)" " 412" \
        "$proto: If-Match with the tag from before the change: 412, not a range"
    is "$(rq -H "If-Unmodified-Since: $lm1" -o /dev/null)" " 412" \
        "$proto: If-Unmodified-Since the date from before the change: 412, not a range"
    is "$(rq -H "If-Match: *")" "version
 206" "$proto: If-Match * holds for any current file"
    out=$("${C[@]}" $proto -r 1000-1999 -o "$TB_TMP/got" -w '%{http_code}' "$URL/big.bin")
    is "$out" 206 "$proto: Range gives 206"
    cmp -s "$TB_TMP/got" <(tail -c +1001 "$W/big.bin" | head -c 1000)
    ok $? "$proto: the range's bytes are right"
    is "$("${C[@]}" $proto -r 5000000- -o /dev/null -w '%{http_code}' "$URL/big.bin")" 416 \
        "$proto: unsatisfiable range gives 416"
    out=$("${C[@]}" $proto --compressed -o "$TB_TMP/got" -w '%{size_download}' "$URL/f16k.txt")
    is "$out" "$(stat -c %s "$W/f16k.txt.gz")" "$proto: gzip client gets the .gz sibling"
    cmp -s "$TB_TMP/got" "$W/f16k.txt"
    ok $? "$proto: which decodes to the file"
    # app.js has .br, .zst and .gz siblings (made below, before the loop).
    # curl --compressed takes all three alike: the smallest is sent.
    out=$("${C[@]}" $proto --compressed -D "$TB_TMP/hdr" -o "$TB_TMP/got" -w '%{size_download}' \
        "$URL/app.js")
    is "$(sed -n 's/^content-encoding: //Ip' "$TB_TMP/hdr" | tr -d '\r') $out" \
        "$smallest_enc $smallest_size" \
        "$proto: a client taking br, zstd and gzip gets the smallest sibling ($smallest_enc)"
    cmp -s "$TB_TMP/got" "$W/app.js"
    ok $? "$proto: which curl decodes to the file"
    for want in br:br zstd:zst gzip:gz; do
        out=$("${C[@]}" $proto -H "Accept-Encoding: ${want%:*}" -D "$TB_TMP/hdr" -o "$TB_TMP/raw" \
            "$URL/app.js" && sed -n 's/^content-encoding: //Ip' "$TB_TMP/hdr" | tr -d '\r')
        is "$out" "${want%:*}" "$proto: Accept-Encoding: ${want%:*} gets Content-Encoding: ${want%:*}"
        cmp -s "$TB_TMP/raw" "$W/app.js.${want#*:}"
        ok $? "$proto: the bytes of app.js.${want#*:}"
    done
    is "$(served_header app.js vary | tr A-Z a-z)" "accept-encoding" "$proto: Vary: Accept-Encoding"
    out=$("${C[@]}" $proto -H "Accept-Encoding: br;q=0.2, zstd;q=0, gzip;q=0.9" -D - -o /dev/null \
        "$URL/app.js" | tr -d '\r' | sed -n 's/^content-encoding: //Ip')
    is "$out" gzip "$proto: the highest weight wins (gzip;q=0.9 over br;q=0.2; zstd;q=0 refused)"
    out=$("${C[@]}" $proto -H "Accept-Encoding: identity" -o "$TB_TMP/got" -w '%{size_download}' \
        "$URL/app.js")
    is "$out" "$(stat -c %s "$W/app.js")" "$proto: a client taking no coding gets the file itself"
    is "$("${C[@]}" $proto -I -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" 200 "$proto: HEAD"

    # ---- refusals ----
    is "$("${C[@]}" $proto --path-as-is -o /dev/null -w '%{http_code}' "$URL/../../etc/passwd")" 400 \
        "$proto: ../ traversal refused"
    is "$("${C[@]}" $proto --path-as-is -o /dev/null -w '%{http_code}' "$URL/%2e%2e/%2e%2e/etc/passwd")" \
        400 "$proto: encoded traversal refused"
    is "$("${C[@]}" $proto -o /dev/null -w '%{http_code}' "$URL/evil")" 404 \
        "$proto: symlink leaving the root refused"
    is "$("${C[@]}" $proto -o /dev/null -w '%{http_code}' "$URL/a%00b")" 400 "$proto: NUL refused"
    is "$("${C[@]}" $proto -o /dev/null -w '%{http_code}' "$URL/nope")" 404 "$proto: 404"
    is "$("${C[@]}" $proto -d x=1 -o /dev/null -w '%{http_code}' "$URL/")" 405 "$proto: POST gives 405"
    is "$("${C[@]}" $proto -o /dev/null -w '%{http_code} %{redirect_url}' "$URL/sub")" \
        "301 $URL/sub/" "$proto: directory without slash redirects"
    # A file made unreadable to hide it (chmod, which changes no mtime)
    # stops being served once its cache entry is looked at again (1 s).
    printf 'soon private\n' >"$W/hide$proto.txt"
    is "$("${C[@]}" $proto -w ' %{http_code}' "$URL/hide$proto.txt")" "soon private
 200" "$proto: a readable file is served (and cached)"
    chmod 0600 "$W/hide$proto.txt"
    code=200
    for _ in $(seq 50); do
        code=$("${C[@]}" $proto -o /dev/null -w '%{http_code}' "$URL/hide$proto.txt")
        [ "$code" = 200 ] || break
        sleep 0.1
    done
    is "$code" 403 "$proto: made unreadable by chmod, it is no longer served (403, as nginx)"
done

# ---- HTTP/1 specifics ---------------------------------------------------------
out=$( (printf 'GET /sub/ HTTP/1.1\r\nHost: localhost\r\n\r\nGET /f16k.txt HTTP/1.1\r\nHost: localhost\r\n\r\nGET /nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'
    sleep 3) | timeout 10 openssl s_client -quiet -connect "127.0.0.1:$P_HTTPS" 2>/dev/null | tr -d '\r')
st=$(printf '%s\n' "$out" | grep -o 'HTTP/1\.1 [0-9][0-9][0-9]' | tr '\n' ' ')
is "$st" "HTTP/1.1 200 HTTP/1.1 200 HTTP/1.1 404 " "three pipelined requests answered in order"
like "$out" "sub page" "pipelined bodies delivered"
# Once a full record has told the client's record limit, an HTTP/1.1 body
# from the cache is sealed where the cache holds it: the response head (and
# what else waits in the output) is written over the bytes before it and
# put back, the first record carries both.  Pipelined answers mixing whole
# files, ranges (which borrow file bytes before the range), HEAD, a 404 and
# a 200 KB cached file (more than one batch of records), then one more
# group on the same connection: a byte not put back, or one sent twice,
# changes a checksum.
head -c 200000 /dev/urandom >"$W/f200k.bin"
sum() { sha256sum | cut -d' ' -f1; }
a16="status=200 bytes=16127 sha256=$(sum <"$W/f16k.txt")"
r16="status=206 bytes=9000 sha256=$(tail -c +1001 "$W/f16k.txt" | head -c 9000 | sum)"
a200="status=200 bytes=200000 sha256=$(sum <"$W/f200k.bin")"
r200="status=206 bytes=50000 sha256=$(tail -c +100001 "$W/f200k.bin" | head -c 50000 | sum)"
asub="status=200 bytes=9 sha256=$(sum <"$W/sub/index.html")"
ahead="status=200 bytes=0 sha256=$(sum </dev/null)"
out=$(timeout 30 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" h1pipe 127.0.0.1 "$P_HTTPS" \
    /f16k.txt "|" /f16k.txt /f16k.txt@1000-9999 /f200k.bin /sub/ HEAD:/f16k.txt \
    /f200k.bin@100000-149999 /nope /f16k.txt "|" /f200k.bin /f16k.txt@1000-9999 /f16k.txt)
"${C[@]}" -o "$TB_TMP/nope" "$URL/nope"
a404="status=404 bytes=$(stat -c %s "$TB_TMP/nope") sha256=$(sum <"$TB_TMP/nope")"
want=$(printf '%s\n' "$a16" "$a16" "$r16" "$a200" "$asub" "$ahead" "$r200" "$a404" \
    "$a16" "$a200" "$r16" "$a16")
is "$out" "$want" "HTTP/1.1: pipelined answers from the cache (whole, ranges, HEAD, 404, 200 KB) are right"
# 10,000 small pipelined requests (320 KB) on one connection, sent at once:
# reading stops at 64 KB of unparsed input while answers wait, and must go
# on once they drained, though the rest already sits in the TLS read-ahead
# and no new epoll edge will come.  20 s is well under the idle timeout.
echo a >"$W/a.txt"
out=$(timeout 40 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" h1flood 127.0.0.1 \
    "$P_HTTPS" tls 10000 /a.txt 20)
is "$out" "answers=10000 200=10000" "HTTP/1.1 over TLS: 10,000 pipelined requests in one go, all answered"
out=$(timeout 40 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" h1flood 127.0.0.1 \
    "$P_HTTP" plain 10000 /a.txt 20)
is "$out" "answers=10000 301=10000" "plain port: 10,000 pipelined requests in one go, all answered"
# One request at a time on one connection (curl), and a slow reader of the
# 200 KB file: its records wait for the socket, sealed a batch at a time.
got=$("${C[@]}" --http1.1 -w '%{stderr}%{num_connects}\n' $(for i in $(seq 10); do
    echo "$URL/f16k.txt"; done) 2>"$TB_TMP/nc" | sum)
is "$got $(paste -sd+ "$TB_TMP/nc" | bc)" "$(for i in $(seq 10); do cat "$W/f16k.txt"; done | sum) 1" \
    "HTTP/1.1: ten answers of the cached 16 KB file on one connection equal it"
got=$("${C[@]}" --http1.1 --limit-rate 2M "$URL/f200k.bin" "$URL/f200k.bin" "$URL/f200k.bin" | sum)
is "$got" "$(cat "$W/f200k.bin" "$W/f200k.bin" "$W/f200k.bin" | sum)" \
    "HTTP/1.1: a slow reader gets the cached 200 KB file right, three times on one connection"

start=$(date +%s)
(printf 'GET /sub/ HTTP/1.0\r\n\r\n'; sleep 8) | timeout 10 openssl s_client -quiet \
    -connect "127.0.0.1:$P_HTTPS" >"$TB_TMP/h10" 2>/dev/null
took=$(($(date +%s) - start))
like "$(head -1 "$TB_TMP/h10")" "^HTTP/1.1 200" "HTTP/1.0 request answered"
# The server closes: openssl s_client exits before the writer's 8 s sleep ends.
ok $((took < 8)) "HTTP/1.0 without keep-alive: the server closes after the response (${took}s)"

# ---- plain HTTP port ---------------------------------------------------------------
out=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://localhost:$P_HTTP/a/b?c=d")
is "$out" "301 https://localhost:$P_HTTPS/a/b?c=d" "plain port: 301 to https with port and query"
out=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.org/x' "http://127.0.0.1:$P_HTTP/")
is "$out" 400 "plain port: invalid Host refused"
out=$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: ' "http://127.0.0.1:$P_HTTP/")
is "$out" 400 "plain port: empty Host refused"
# The absolute-form must be accepted, its host used rather than Host's
# (RFC 9112 3.2.2); its authority is checked as Host is.
out=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' \
    --request-target "http://example.org/a/b?c=d" "http://127.0.0.1:$P_HTTP/")
is "$out" "301 https://example.org:$P_HTTPS/a/b?c=d" "plain port: absolute-form target: 301 to its host"
out=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' \
    --request-target "HTTP://Example.org" "http://127.0.0.1:$P_HTTP/")
is "$out" "301 https://example.org:$P_HTTPS/" "plain port: absolute-form without a path: 301 to /"
out=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' \
    --request-target "http://example.org?a=1" "http://127.0.0.1:$P_HTTP/")
is "$out" "301 https://example.org:$P_HTTPS/?a=1" "plain port: absolute-form with a query but no path: 301 to /?query"
out=$(curl -s -o /dev/null -w '%{http_code}' \
    --request-target "http://user@evil.org/x" "http://127.0.0.1:$P_HTTP/")
is "$out" 400 "plain port: absolute-form with userinfo refused"

# ---- IPv6 ---------------------------------------------------------------------
if curl -s -g --max-time 5 -k -o /dev/null "https://[::1]:$P_HTTPS/" 2>/dev/null ||
    ip -6 addr show lo 2>/dev/null | grep -q '::1'; then
    is "$(curl -s -g -k --max-time 5 -o /dev/null -w '%{http_code}' "https://[::1]:$P_HTTPS/sub/")" \
        200 "IPv6 ::1 serves"
else
    diag "no IPv6 loopback on this host"
fi

# ---- nghttp: frames and SETTINGS ----------------------------------------------------
out=$(nghttp -nv --timeout=10 "$URL/sub/" 2>&1)
like "$out" "recv SETTINGS frame" "nghttp: server SETTINGS received"
like "$out" "SETTINGS_MAX_CONCURRENT_STREAMS\(0x03\):100" "nghttp: max concurrent streams 100"
like "$out" "SETTINGS_MAX_HEADER_LIST_SIZE\(0x06\):[0-9]+" "nghttp: max header list size advertised"
like "$out" ":status: 200" "nghttp: 200"
like "$out" "strict-transport-security" "nghttp: HSTS on h2"

# ---- HTTP/2: where END_STREAM comes ------------------------------------------------------
# A GET or HEAD without a body may end in an empty DATA frame or in trailers
# after its HEADERS (RFC 9113 8.1): answered, not refused as a body (413).
# A body (DATA bytes, or a content-length above 0) is still refused.
h2end() { timeout 20 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" h2end 127.0.0.1 "$P_HTTPS" "$@"; }
is "$(h2end empty /f16k.txt)" "status=200 bytes=16127" "h2: GET, then an empty DATA frame with END_STREAM: 200"
is "$(h2end head-empty /f16k.txt)" "status=200 bytes=0" "h2: HEAD, then an empty DATA frame with END_STREAM: 200"
is "$(h2end trailers /f16k.txt)" "status=200 bytes=16127" "h2: GET, then trailers with END_STREAM: 200"
is "$(h2end data /f16k.txt)" "status=413 bytes=123" "h2: GET with a 5-byte DATA body: 413"
is "$(h2end clen /f16k.txt)" "status=413 bytes=123" "h2: GET with content-length: 5, answered 413 before the body"

# ---- metrics ---------------------------------------------------------------------------
# Byte and CPU counters are flushed once a second: wait for both.
tb_wait_like 10 'tlsbox_site_bytes_sent_total":[1-9]' site_api GET metrics >/dev/null
m=$(tb_wait_like 10 'tlsbox_site_cpu_microseconds_total":[1-9]' site_api GET metrics)
like "$m" 'tlsbox_site_requests_total\{proto=\\"h2\\",code=\\"2xx\\"\}":[1-9]' "metrics: h2 2xx requests"
like "$m" 'tlsbox_site_requests_total\{proto=\\"h1\\",code=\\"4xx\\"\}":[1-9]' "metrics: h1 4xx requests"
like "$m" 'tlsbox_site_requests_total\{proto=\\"http\\",code=\\"3xx\\"\}":[1-9]' "metrics: plain 3xx"
like "$m" 'tlsbox_site_handshakes_total\{kind=\\"full\\"\}":[1-9]' "metrics: full handshakes"
like "$m" 'tlsbox_site_handshakes_by_version_total\{version=\\"TLS1.3\\"\}":[1-9]' "metrics: by version"
like "$m" 'tlsbox_site_handshakes_by_key_type_total\{key_type=\\"ECDSA\\"\}":[1-9]' "metrics: key type"
like "$m" 'tlsbox_site_bytes_sent_total":[1-9]' "metrics: bytes out"
like "$m" 'tlsbox_site_handshake_seconds":\{"count":[1-9]' "metrics: handshake histogram"
like "$m" 'tlsbox_site_cpu_microseconds_total":[1-9]' "metrics: worker CPU time"

# ---- graceful stop -----------------------------------------------------------------------
# 24 MB read at 8 MB/s: more than loopback socket buffers hold, so the server
# still has data to send when it is told to stop.
head -c 25165824 /dev/zero >"$W/huge.bin"
"${C[@]}" --http1.1 --limit-rate 8M -o "$TB_TMP/slow" "$URL/huge.bin" &
dl=$!
# Stop once the download is under way (its first MB arrived), not while
# curl may still be in its handshake (a stop closes those at once).
for _ in $(seq 1 100); do
    [ "$(stat -c %s "$TB_TMP/slow" 2>/dev/null || echo 0)" -ge 1048576 ] && break
    sleep 0.1
done
t0=$(date +%s.%N)
# About 3 s of the download are left; the stop waits for it (up to
# site.stop_timeout), then the other plugins stop.
tb_stop_daemon TERM 10
ok $? "daemon stops within 10 s with a download in flight"
t1=$(date +%s.%N)
wait $dl
ok $? "the in-flight download completed"
cmp -s "$TB_TMP/slow" "$W/huge.bin"
ok $? "and its body is whole"
ok "$(echo "$t1 - $t0 > 0.5" | bc -l | grep -q 1; echo $?)" "the stop waited for the response ($(echo "$t1 - $t0" | bc -l | cut -c1-4) s)"
done_testing
