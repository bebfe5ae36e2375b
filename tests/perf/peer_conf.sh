# shellcheck shell=bash
# Configuration of the servers tlsbox is measured against: nginx (one worker)
# and h2o (one thread), TLS 1.3 only, one certificate, one directory served
# on 127.0.0.1, long timeouts so that no run measures reconnects.  Sourced by
# tests/perf/compare.sh, tests/perf/ocsp_first_staple.sh and
# plugins/bench/tests/bench_itest.sh, so that compare.sh, make perf-ocsp,
# make perf-bench and the bench tests all meet the same servers.
#
#   peer_nginx_conf DIR PORT CERT KEY ROOT MAX_CONNS ACCESS_LOG
#       nginx.conf on stdout; DIR holds its pid and error log; ACCESS_LOG is
#       a file or "off"
#   peer_h2o_conf DIR PORT CERT KEY ROOT MAX_CONNS
#       h2o.conf on stdout; DIR holds its pid and error log.  As root h2o
#       switches to nobody before it writes its pid file: it stays root so it
#       can write it in DIR (no effect on the measured work).  It writes no
#       access log (no access-log directive).
#
# PEER_SAME_HEADERS=1 makes both peers answer with the headers tlsbox adds by
# default (Strict-Transport-Security, X-Content-Type-Options, Referrer-Policy,
# and "; charset=utf-8" on text), as the TLS guides users copy configure them:
# the same response bytes, so the same TLS records per response.
#
# PEER_OCSP_TRUST=FILE (the CA certificates that sign the OCSP responder's
# answers) makes both staple OCSP: nginx with ssl_stapling and
# ssl_stapling_verify against FILE, h2o with its own updater at start
# (otherwise off: ocsp-update-interval 0).  CERT must then be the leaf and
# its chain.  Used by tests/perf/ocsp_first_staple.sh.

peer_nginx_conf() {
    local d=$1 port=$2 cert=$3 key=$4 root=$5 max=$6 log=$7
    # keepalive_requests: nginx 1.22 closes a connection (h1 and h2) after
    # 1000 requests by default; keep-alive runs measure requests, not reconnects.
    cat <<EOF_NGINX
worker_processes 1;
worker_rlimit_nofile $((max + 1000));
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections $max; }
http {
    access_log $log;
    keepalive_requests 1000000;
    keepalive_timeout 600s;
    http2_recv_timeout 600s;
    http2_idle_timeout 600s;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port ssl http2;
        server_name localhost;
        ssl_certificate $cert;
        ssl_certificate_key $key;
        ssl_protocols TLSv1.3;
        root $root;
$(peer_nginx_headers; peer_nginx_ocsp)
    }
}
EOF_NGINX
}

peer_h2o_conf() {
    local d=$1 port=$2 cert=$3 key=$4 root=$5 max=$6
    [ "$(id -u)" = 0 ] && echo "user: root"
    cat <<EOF_H2O
num-threads: 1
max-connections: $max
http1-request-timeout: 600
http2-idle-timeout: 600
pid-file: $d/h2o.pid
error-log: $d/error.log
listen:
  host: 127.0.0.1
  port: $port
  ssl:
    certificate-file: $cert
    key-file: $key
    minimum-version: TLSv1.3
$([ -n "${PEER_OCSP_TRUST:-}" ] || echo "    ocsp-update-interval: 0")
hosts:
  default:
    paths:
      /:
        file.dir: $root
$(peer_h2o_headers)
EOF_H2O
}

# The values are tlsbox's defaults (plugins/site/site_h1.c, site_h2.c).
peer_nginx_headers() {
    [ "${PEER_SAME_HEADERS:-0}" = 1 ] || return 0
    cat <<'EOF_NGINX_HDR'
        charset utf-8;
        add_header Strict-Transport-Security "max-age=31536000" always;
        add_header X-Content-Type-Options nosniff always;
        add_header Referrer-Policy strict-origin-when-cross-origin always;
EOF_NGINX_HDR
}

peer_nginx_ocsp() {
    [ -n "${PEER_OCSP_TRUST:-}" ] || return 0
    cat <<EOF_NGINX_OCSP
        ssl_stapling on;
        ssl_stapling_verify on;
        ssl_trusted_certificate $PEER_OCSP_TRUST;
EOF_NGINX_OCSP
}

peer_h2o_headers() {
    [ "${PEER_SAME_HEADERS:-0}" = 1 ] || return 0
    cat <<'EOF_H2O_HDR'
        file.mime.addtypes:
          "text/html; charset=utf-8": .html
        header.add: "strict-transport-security: max-age=31536000"
        header.add: "x-content-type-options: nosniff"
        header.add: "referrer-policy: strict-origin-when-cross-origin"
EOF_H2O_HDR
}
