/*
 * The site plugin's private declarations: configuration, worker, connection,
 * request and response shapes shared by its files.  Nothing here is part of
 * the plugin kit; the only way out to the core is the host table.
 */
#ifndef TLSBOX_SITE_H
#define TLSBOX_SITE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <tlsbox/host.h>
#include <tlsbox/xalloc.h>

struct nghttp2_session;
struct site_worker;
struct site_centry;
struct site_ipcount;
struct site_ipcount_entry;

/* ---- configuration (site.c) -------------------------------------------- */

struct site_config {
    int workers;
    _Atomic int https_port; /* read by the redirect; changed live */
    int http_port;
    char **bind;
    size_t nbind;
    char *root;
    int max_connections;
    int max_header_size;
    int max_request_line;
    int h2_max_streams;
    int h2_window;
    int stop_timeout_ms;
    size_t cache_bytes;    /* split among a generation's workers */
    size_t cache_max_file; /* files up to this size are cached */
    /* Changed live on settings.changed: read with relaxed atomics. */
    _Atomic int handshake_timeout_ms, header_timeout_ms, idle_timeout_ms, send_timeout_ms;
    /* LINGER: discard input while it keeps coming (gaps up to
     * lingering_timeout), for lingering_time at most (as nginx) */
    _Atomic int lingering_time_ms, lingering_timeout_ms;
    _Atomic bool access_log;
    _Atomic bool dotfiles_allow;  /* serve paths with a segment starting with '.' */
    _Atomic int max_conns_per_ip; /* per client address (IPv4, or IPv6 /64) */
    _Atomic int batch_wait_us;    /* site_wait.c: 0 = wake for every event */
};

/* ---- metrics (site_metrics.c) ------------------------------------------ */

enum site_proto { SITE_PROTO_H1, SITE_PROTO_H2, SITE_PROTO_PLAIN, SITE_PROTO_MAX };

struct site_label_cache {
    const char *key[16];
    struct tlsbox_metric *m[16];
    int n;
};

struct site_metrics {
    struct tlsbox_metric *hs_full, *hs_resumed, *hs_fail_timeout, *hs_duration;
    struct tlsbox_metric *conns_open, *conns_total, *conns_refused;
    struct tlsbox_metric *requests[SITE_PROTO_MAX][6]; /* [proto][status/100], 0 = other */
    struct tlsbox_metric *bytes_in, *bytes_out, *cpu_us;
    struct tlsbox_metric *h2_refused_streams, *h2_glitch_goaways;
    struct tlsbox_metric *batches_woken, *batches_polled;
};

/* Per worker, so lookups by label need no lock. */
struct site_wmetrics {
    struct site_label_cache version, cipher, group, sigalg, keytype, alert;
    uint64_t bytes_in, bytes_out; /* flushed once a second */
    uint64_t cpu_ns_flushed;
};

/* ---- waiting for events (site_wait.c) ------------------------------------ */

/* One per worker thread, touched by that thread only. */
struct site_waiter {
    bool batching;  /* the last wait returned several events */
    int gain;       /* site_wait.c: what batch sleeps gathered, running average */
    unsigned probe; /* qualifying waits while sleeps did not pay */
    /* batches taken after a wake-up / by a poll; the metrics tick adds them
     * to the metrics and zeroes them, as it does wm.bytes_in */
    uint64_t woken, polled;
};

/* epoll_wait() on @p ep, batching under load: while batching, poll, sleep
 * @p batch_us if nothing is ready, and poll again; once that finds nothing,
 * block for @p timeout_ms.  A blocking wait that returns two or more events
 * starts batching while batch sleeps gather two or more events on average
 * (and one time in 16 otherwise, to measure again); @p batch_us 0 = never.
 * Returns as epoll_wait() does. */
int site_wait(struct site_waiter *sw, int ep, struct epoll_event *evs, int max, int timeout_ms,
              int batch_us);
/* Gives the calling thread (a worker) the small timer slack its batch sleeps
 * need to last as long as asked.  Call once, on the worker thread. */
void site_wait_thread_init(void);

/* ---- the plugin state (site.c) ----------------------------------------- */

/* The listening sockets, shared by the workers of one generation. */
struct site_listener {
    int fd;
    bool tls;
    int port;
    char addr[64]; /* as in site.bind */
};
struct site_listeners {
    struct site_listener *v;
    size_t n;
};

/*
 * A generation: workers and the listeners they share.  A live change of
 * site.workers, the ports or site.bind starts a new generation (keeping the
 * sockets of unchanged ports), then drains the old one in the background:
 * its connections finish, none is dropped.
 */
struct site_gen {
    struct site *s;
    struct site_worker *workers;
    int nworkers;
    struct site_listeners lst;
    _Atomic bool stopping; /* drain and exit */
    bool retiring;         /* replaced by a live change: drain gently (SITE_RETIRE_MS) */
    _Atomic bool hurry;    /* the daemon stops meanwhile: drain as at stop */
    _Atomic int unwatched; /* workers that took the listeners off their epoll */
    pthread_t reaper;      /* joins a retired generation's workers */
    _Atomic bool reaped;   /* the reaper joined them: the next retire frees it */
    struct site_gen *next; /* list of retired generations */
};

struct site {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    struct site_config cfg;
    /* The root directory; workers hold a dup() each and take the new one
     * when root_gen changes (a live change of site.root). */
    pthread_mutex_t root_lock;
    int rootfd;
    _Atomic unsigned root_gen;
    pthread_mutex_t gen_lock; /* gen, retired, cfg's restart-time fields */
    struct site_gen *gen;
    struct site_gen *retired;
    int nworkers;
    /* Could open ports below 1024 when it started (tlsboxd started as root):
     * a live move to one is then stored for the next start. */
    bool low_ports_at_start;
    _Atomic int nconns;
    /* Files the workers hold open, and what connections plus files may use
     * of the open file limit: the rest is kept for the store, the control
     * socket and other plugins (SITE_FD_RESERVE). */
    _Atomic int nfiles;
    int fd_budget;
    /* Open connections per client address (IPv4, or IPv6 /64), each
     * counted exactly (site_ipcount.c), in SITE_IP_BUCKETS buckets by a
     * hash keyed afresh at each start. */
    struct site_ipcount *ip_conns;
    int64_t sub_id;
    struct site_metrics m;
};

#define SITE_LOG(s, lvl, ...) (s)->host->log((s)->self, (lvl), __VA_ARGS__)

/* ---- requests and responses -------------------------------------------- */

enum site_method { SITE_M_GET, SITE_M_HEAD, SITE_M_OTHER };

/* A parsed request, protocol-independent.  Strings are borrowed (from the
 * connection's input or the h2 stream) and not NUL-terminated unless said. */
struct site_str {
    const char *p;
    size_t n;
};

/* If-None-Match field lines of one request that are kept and compared: RFC
 * 9110 5.3 reads several lines as one comma-joined list, so the tag that
 * matches may be on any of them.  A request with more lines than this is
 * sent the file (never a 304 for a line not looked at). */
#define SITE_INM_LINES 8

/* Content codings of precompressed siblings (site_files.c), in the order a
 * tie between equal weights and sizes is broken. */
enum site_encoding { SITE_ENC_BR, SITE_ENC_ZSTD, SITE_ENC_GZIP, SITE_ENC_N };

struct site_req {
    enum site_method method;
    struct site_str method_s;
    struct site_str target; /* path with query, as sent */
    struct site_str host;
    struct site_str inm[SITE_INM_LINES]; /* If-None-Match, one per non-empty line */
    uint8_t ninm;
    bool inm_over;     /* more If-None-Match lines than SITE_INM_LINES */
    bool ims_conflict; /* If-Modified-Since lines that differ: no date to compare */
    struct site_str ims, range, if_range;
    /* If-Match (the last non-empty line) and If-Unmodified-Since, RFC 9110
     * 13.1.1 and 13.1.4: a client resuming a download sends them with a
     * Range so that it is never spliced from two versions of the file. */
    struct site_str if_match, ius;
    bool im_conflict;  /* If-Match lines that differ: not evaluated here, 412 */
    bool ius_conflict; /* If-Unmodified-Since lines that differ: ignored */
    /* Accept-Encoding: the weight (0-1000) of each coding of enum
     * site_encoding; 0 = not acceptable (not named, or q=0) */
    uint16_t accept_q[SITE_ENC_N];
    bool http10;     /* h1 only */
    bool keep_alive; /* h1 only: what the client asked for */
    bool has_body;   /* Content-Length > 0 or Transfer-Encoding */
};

/* What to answer.  The body comes from exactly one source. */
struct site_resp {
    int status;
    const char *ctype;
    /* Extra header lines "Name: value\r\n" (h1 form): Location, Allow,
     * Retry-After, Content-Range.  Owned, allocated by the first
     * site_resp_add_header (most answers have none) and freed once the head
     * is written (site_resp_drop_extra): an h2 stream or an h1 download in
     * progress no longer carries SITE_RESP_EXTRA_MAX bytes for it. */
    char *extra;
    size_t extra_len;
    /* file metadata for ETag/Last-Modified; valid when has_validators */
    bool has_validators;
    char etag[48];
    char lastmod[32];
    time_t mtime;
    uint8_t enc; /* 0 = identity, else the sibling's enum site_encoding + 1 */
    bool vary;
    bool range; /* 206: Content-Range bytes range_start-..../total */
    uint64_t total;
    /* body source */
    struct site_centry *ce; /* cached file (a reference) */
    int fd;                 /* or an open file, -1 */
    /* An open file's name and identity, so that it can be closed while the
     * client cannot take data (site_resp_park) and reopened when it can. */
    _Atomic int *nfiles; /* counts the open file (struct site's) */
    char *file;          /* owned; path under the root */
    bool parked;         /* the file is closed for now */
    dev_t dev;
    ino_t ino;
    struct timespec mtim;
    const char *mem;   /* or memory (static or owned) */
    char *owned;       /* freed with the response */
    uint64_t off, len; /* window of the source still to send */
};

/* The most bytes of extra header lines one answer holds. */
#define SITE_RESP_EXTRA_MAX 1280

/* A cached file's data has this many writable bytes before it and one
 * after it: room the worker owning the cache borrows, and restores, to seal
 * an h2 DATA frame with its frame header (and the frames queued before it),
 * or an h1 body with its response head, as one contiguous record without
 * copying the file (site_conn_seal_cached). */
#define SITE_CE_ROOM 512

/* ---- TLS 1.3 records sealed by the site (site_record.c) ----------------- */

#define SITE_REC_TAG 16                          /* AES-GCM and ChaCha20-Poly1305 */
#define SITE_REC_PLAIN_MAX 16384                 /* plaintext per record (RFC 8446 5.1) */
#define SITE_REC_OVERHEAD (5 + 1 + SITE_REC_TAG) /* header, inner type, tag */

struct site_rec_key;

/* Per connection, on its worker only (like the GnuTLS session it follows). */
struct site_rec {
    struct site_rec_key
        *k; /* our copy of GnuTLS's write key; NULL until the first record and while idle */
    uint8_t peer_iv[12]; /* the peer's write IV last seen: a change means a KeyUpdate came */
    uint16_t max;        /* plaintext per record the peer takes, learnt from GnuTLS; 0 = not yet */
    bool own;            /* TLS 1.3 with AES-GCM or ChaCha20-Poly1305: records may be sealed here */
    bool via_gnutls;     /* the next record goes through gnutls_record_send() */
};

/* After the handshake: decide whether this session's records may be sealed
 * here.  @p r starts zeroed; @p s is the connection's session. */
void site_rec_start(struct site_rec *r, gnutls_session_t s);
/* Whether the next record may be sealed here: 1 yes (site_rec_seal), 0 no
 * (send it with gnutls_record_send() and report with site_rec_sent_by_gnutls()),
 * or a negative GnuTLS error (the connection must close).  May push a
 * KeyUpdate through the session's push function (into c->enc). */
int site_rec_wanted(struct site_rec *r, gnutls_session_t s);
/* gnutls_record_send() took @p took of the @p asked plaintext bytes. */
void site_rec_sent_by_gnutls(struct site_rec *r, size_t asked, size_t took);
/* Seal @p n plaintext bytes (1 to r->max) from @p p into one record at @p dst,
 * which has room for n + SITE_REC_OVERHEAD bytes; the record is exactly that
 * long.  With @p spare, p[n] is in the caller's writable buffer: it is
 * borrowed for the record's inner type and restored before the return (the
 * faster, contiguous encryption).  Returns n, or a negative GnuTLS error
 * (the connection must close).  Only after site_rec_wanted() said true, with
 * no GnuTLS call in between. */
ssize_t site_rec_seal(struct site_rec *r, gnutls_session_t s, void *p, size_t n, bool spare,
                      uint8_t *dst);
/* Drop the key copy: the connection is idle (it is made again on the next
 * record) or closes (call before gnutls_deinit). */
void site_rec_free(struct site_rec *r);
/* Tests: update the key after this many records (0: the default, 2^23). */
void site_rec_set_rekey_after(uint64_t records);
/* Which code seals AES-GCM records: "GnuTLS", or "intel-ipsec-mb (ARCH)"
 * when the build has it and the CPU has AES-NI.  Any thread. */
const char *site_rec_aes_impl(void);
/* Tests: false seals every AES-GCM key made from now on with GnuTLS. */
void site_rec_set_fast_aes(bool on);

/* ---- connections (site_conn.c) ----------------------------------------- */

/* LINGER: the answer is out and our side shut down; input is read and
 * discarded for a while so that a body still arriving does not make the
 * kernel reset the connection (and destroy the answer) on close. */
enum site_conn_state { SITE_CS_HANDSHAKE, SITE_CS_H1, SITE_CS_H2, SITE_CS_LINGER, SITE_CS_CLOSED };
enum site_timer_kind {
    SITE_T_NONE,
    SITE_T_HANDSHAKE,
    SITE_T_HEADER,
    SITE_T_IDLE,
    SITE_T_SEND,
    SITE_T_LINGER,
    SITE_T_MAX
};

struct site_conn {
    struct site_worker *w;
    int fd;
    bool tls;
    bool want_close;   /* close once the output is flushed */
    bool read_blocked; /* stopped reading while output drains */
    bool drained;      /* the last recv() was short: the socket is empty until the next edge */
    bool rdhup;        /* the peer shut its side: read until recv() says 0, short reads or not */
    bool peer_eof;     /* the peer sent all it will (FIN, close_notify): answer, then close */
    bool in_free_list;
    bool linger;            /* unread input may follow: close gracefully (LINGER) */
    bool linger_shut;       /* LINGER: our FIN is sent (after the close_notify left) */
    uint64_t linger_end_ms; /* LINGER: discard no longer than this (lingering_time) */
    uint8_t state;
    uint8_t tkind;
    uint8_t batch_sends; /* full sends since send_batch was last asked of the kernel */
    uint32_t send_batch; /* ciphertext bytes per full send(), whole TCP segments; 0 = not yet */
    struct site_conn *tprev, *tnext; /* timer list of tkind */
    uint64_t deadline_ms;
    gnutls_session_t session;
    struct site_rec rec; /* our own TLS 1.3 records (site_record.c) */
    struct tlsbox_bundle *bundle;
    const char *hsts;
    size_t hsts_len;
    uint64_t t_hello_ns;
    /* input not yet consumed (h1 partial or pipelined requests) */
    char *in;
    uint32_t in_len, in_cap;
    /* output not yet sent */
    char *out;
    uint32_t out_off, out_len, out_cap;
    /* bytes at the start of in known to hold no end of a request head: a
     * head arriving in pieces is searched only in what is new */
    uint32_t h1_scanned;
    /* TLS records not yet sent: GnuTLS's (our push function) and site_record.c's */
    char *enc;
    uint32_t enc_off, enc_len, enc_cap;
    /* received bytes GnuTLS did not pull yet (rare: see site_conn.c) */
    char *stash;
    uint32_t stash_off, stash_len;
    /* h1: the response body still to stream, and whether to close after it */
    struct site_resp *h1_body;
    bool h1_close_after;
    struct nghttp2_session *h2;
    void *h2_streams; /* list of open streams (site_h2.c) */
    bool h2_goaway;
    /* nghttp2's frame buffer (mmap()ed by site_h2_mem.c's allocator), given back
     * to the kernel while the connection is idle (site_h2_release); the
     * flag covers the stream table (h2_table) too */
    bool h2_making;    /* nghttp2_session_server_new3 is running */
    bool h2_fbuf_idle; /* released, untouched since */
    uint8_t h2_lazy_n; /* blocks in h2_lazy not yet freed */
    uint16_t h2_lazy_off;
    /* stream resets a client made us send (site_h2.c's h2_glitch): tokens
     * left, and the second (worker clock) they were last topped up */
    uint16_t h2_glitch_tokens;
    uint32_t h2_fbuf_len;
    uint32_t h2_glitch_sec;
    void *h2_fbuf;
    /* one mmap()ed page holding nghttp2's two HPACK table indexes, which
     * stay unwritten, so not resident, until a header is indexed */
    void *h2_lazy;
    /* nghttp2's stream table (its first zeroed block of a page or more),
     * given back with the frame buffer while it holds only zeros */
    void *h2_table;
    uint32_t h2_table_len;
    uint32_t nreq;
    /* response body bytes put into the output so far: the send timeout's
     * notion of progress (see update_timer in site_conn.c) */
    uint64_t data_out;
    uint64_t mark_data;
    uint32_t mark_nreq;
    /* Heap bytes held by the kept request headers of h2 streams not yet
     * answered, against a budget of 4 x max_header_size (site_h2.c). */
    uint32_t h2_kept;
    /* h2 streams holding an open file (at most SITE_CONN_FILES) */
    int files;
    int h2_waiting;                /* h2 streams deferred for want of a file slot */
    struct site_ipcount_entry *ip; /* counted in s->ip_conns, or NULL */
};

/* ---- worker (site_worker.c) -------------------------------------------- */

struct site_tlist {
    struct site_conn *head, *tail;
};

/* Freed output buffers of one size, kept for the next connection that
 * sends: a busy worker takes and returns one per flush. */
struct site_bufpool {
    void *b[8];
    int n;
};

#define SITE_INBUF 16640
#define SITE_OUTBUF 65536
#define SITE_OUT_HIGH 49152
#define SITE_RBUF 32768
/* Most that one gnutls_record_send() of up to 16 KB pushes: the record and
 * its overhead (22 bytes for TLS 1.3 AES-GCM; 256 covers every suite). */
#define SITE_TLS_RECORD_MAX (16384 + 256)
/* Ciphertext buffer (c->enc): encrypting goes on while it holds less than
 * 64 KB, so a send() carries four full records, and the record that crosses
 * 64 KB still fits: the buffer never grows (it used to be realloc()ed to
 * 128 KB and then freed, once per batch). */
#define SITE_ENC_HIGH 65536
#define SITE_ENCBUF (SITE_ENC_HIGH + SITE_TLS_RECORD_MAX)
/* Most ciphertext one send() carries as one socket buffer: a little under
 * the kernel's 64 KB less headers (see send_batch in site_conn.c). */
#define SITE_SEND_BUDGET (65536 - 1024)
/* Open files one HTTP/2 connection may hold at once; its other streams wait
 * for one of them to finish.  A stream whose flow-control window is spent
 * holds none (closed after its DATA frame, reopened by a WINDOW_UPDATE), so
 * neither a zero-window client nor one granting a byte at a time keeps them. */
#define SITE_CONN_FILES 8
/* Descriptors of the open file limit the site leaves to the rest of tlsboxd. */
#define SITE_FD_RESERVE 128
/* A generation replaced live drains for the idle timeout plus this at least
 * (its connections end as usual), then closes what is left. */
#define SITE_RETIRE_MS 5000
#define SITE_IP_BUCKETS 16384

struct site_cache;

struct site_worker {
    struct site *s;
    int id;
    pthread_t thread;
    int ep;
    int evfd;
    struct site_gen *gen;
    struct site_listeners *lst; /* the generation's, borrowed */
    bool listening;             /* the listeners are in our epoll */
    int rootfd;                 /* our dup() of the root */
    unsigned root_gen;
    bool draining;
    bool hurried; /* hurry_drain done */
    /* Out of file descriptors: listeners are off epoll until this time. */
    bool accept_paused;
    uint64_t accept_resume_ms;
    uint64_t emfile_warn_ms;
    uint64_t warn_ms; /* site_warn's last line */
    uint64_t now_ms;
    uint64_t drain_deadline_ms;
    time_t date_sec;
    char date[40]; /* IMF-fixdate of date_sec */
    size_t date_len;
    struct site_tlist tl[SITE_T_MAX];
    int tl_ms[SITE_T_MAX]; /* the timeout each list's deadlines were set with */
    int nconns;
    struct site_conn *dead; /* closed, freed after the current batch of events */
    char inbuf[SITE_INBUF];
    /* read-ahead for GnuTLS's pull function: one recv() per readable edge */
    char rbuf[SITE_RBUF];
    uint32_t rb_off, rb_len;
    struct site_conn *rb_owner;
    struct site_bufpool outpool; /* free SITE_OUTBUF buffers (c->out) */
    struct site_bufpool encpool; /* free SITE_ENCBUF buffers (c->enc) */
    struct site_cache *cache;
    struct site_wmetrics wm;
    struct site_waiter waiter;
    uint64_t last_tick_ms;
};

/* site_worker.c */
/* Start a generation of s->nworkers workers on listeners opened from s->cfg
 * (reusing @p prev's sockets for unchanged ports); NULL on failure (logged),
 * *err set to a negative errno and, when @p why is not NULL and a port could
 * not be opened, *why to the message logged (caller frees). */
struct site_gen *site_gen_start(struct site *s, const struct site_gen *prev, int *err, char **why);
/* Stop a generation: drain, join, free. */
void site_gen_stop(struct site_gen *g);
/* Retire a generation: drain and free it on a thread of its own. */
void site_gen_retire(struct site *s, struct site_gen *g);
/* Take a new site.root if there is one (before serving a request). */
void site_root_follow(struct site_worker *w);
/* Join every retired generation (at stop). */
void site_gen_reap_all(struct site *s);
void site_timer_set(struct site_conn *c, enum site_timer_kind k);
uint64_t site_now_ms(void);
uint64_t site_now_ns(void);
void site_worker_update_date(struct site_worker *w, time_t now);
/* A warning caused by a request: logged at most once a second per worker, so
 * a client cannot flood the journal. */
void site_warn(struct site_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* site_conn.c */
void site_conn_accept(struct site_worker *w, int fd, bool tls, struct site_ipcount_entry *ip);
void site_conn_on_event(struct site_conn *c, uint32_t events);
void site_conn_close(struct site_conn *c);
void site_conn_timeout(struct site_conn *c);
/* Graceful stop: finish and close.  @p gentle (a live change): an HTTP/1
 * connection closes after its next answer, any other is left to end as usual
 * (idle timeout), so that no request fails. */
void site_conn_drain(struct site_conn *c, bool gentle);
/* Make room for n more bytes in the output buffer; returns the write pointer. */
char *site_out_reserve(struct site_conn *c, size_t n);
void site_out_append(struct site_conn *c, const void *p, size_t n);
void site_out_release_if_empty(struct site_conn *c);
/* Send what is buffered, refilling from the protocol; returns 0, or -1 after closing. */
int site_conn_flush(struct site_conn *c);
/* One TLS record of what c->out holds, @p hdn bytes of @p hd (h2: a DATA
 * frame header; h1: none) and the @p n bytes at @p data of a cached file
 * (with SITE_CE_ROOM borrowable bytes before @p data and one after its end),
 * sealed into c->enc; c->out's bytes go first as records of their own when
 * they do not fit in front.  A record too long by less than c->out's bytes
 * is cut full, and the file's last bytes are left in c->out instead.  1 done
 * (c->out holds at most those bytes), 0 not here (copy: GnuTLS
 * seals this connection's records, or the record would be too large), 2
 * c->enc is full (offer it again after a send), or a negative GnuTLS error
 * (close).  On the connection's worker. */
int site_conn_seal_cached(struct site_conn *c, const void *hd, size_t hdn, char *data, size_t n);
/* An h1 body from the cache: as much of the @p n bytes at @p data (room as
 * above) as c->enc takes, sealed as full records, the first one with c->out's
 * bytes (the response head) in front.  Returns the bytes of @p data sealed,
 * or a negative GnuTLS error (close); when it returns less than @p n,
 * *copy says whether the rest must be copied (GnuTLS seals) or waits for
 * c->enc to drain.  On the connection's worker. */
long site_conn_seal_body(struct site_conn *c, char *data, size_t n, bool *copy);

/* site_listen.c */
/* Open @p cfg's listeners into @p l.  Returns 0, or a negative errno after
 * logging which setting, address and port failed; *why (when @p why is not
 * NULL; caller frees) gets the same message. */
int site_listeners_open(struct site *s, const struct site_config *cfg,
                        const struct site_listeners *prev, struct site_listeners *l, char **why);
void site_listeners_close(struct site_listeners *l);

/* site_tls.c */
int site_tls_setup(struct site_conn *c);
/* GnuTLS transport callbacks (site_conn.c) */
ssize_t site_tls_pull(gnutls_transport_ptr_t p, void *data, size_t len);
ssize_t site_tls_push(gnutls_transport_ptr_t p, const void *data, size_t len);
int site_tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms);
/* 1 done, 0 in progress, -1 failed (logged/counted). */
int site_tls_handshake(struct site_conn *c);
void site_tls_count_timeout(struct site_conn *c);

/* site_h1.c */
/* Parse one request from buf.  Returns bytes consumed (>0) and fills rq, 0 when
 * more input is needed, or -status (400, 413, 414, 431, 505) on a bad request. */
long site_h1_parse(const char *buf, size_t len, const struct site_config *cfg, struct site_req *rq);
/* The same, told that the first @p scanned bytes of buf were parsed before
 * (an answer of 0): the end of the head is looked for only from there, so a
 * head sent in many small pieces costs linear, not quadratic, time. */
long site_h1_parse_from(const char *buf, size_t len, size_t scanned, const struct site_config *cfg,
                        struct site_req *rq);
/* Note an If-Match or If-Unmodified-Since line (@p v: its trimmed value,
 * kept where it lies), over HTTP/1 and HTTP/2 alike. */
void site_req_if_match(struct site_req *rq, struct site_str v);
void site_req_ius(struct site_req *rq, struct site_str v);
/* Parse an Accept-Encoding value into @p q: each coding's weight (RFC 9110
 * 12.4.2, 0-1000), 0 when not acceptable.  "*" gives its weight to the
 * codings the value does not name; a malformed weight counts as 1000. */
void site_accept_encoding(const char *p, size_t n, uint16_t q[SITE_ENC_N]);
/* The name of a coding as in Content-Encoding (site_files.c). */
const char *site_encoding_name(enum site_encoding e);
void site_h1_on_data(struct site_conn *c, const char *data, size_t n);
/* Unparsed HTTP/1 input buffered before reading pauses (above any allowed head). */
size_t site_h1_in_limit(const struct site_config *cfg);
int site_h1_produce(struct site_conn *c); /* stream more body; 1 when done */
size_t site_h1_head(char *dst, size_t cap, const struct site_conn *c, const struct site_resp *rs,
                    bool keep_alive, bool http10);

/* site_h2.c */
int site_h2_start(struct site_conn *c);
int site_h2_on_data(struct site_conn *c, const char *data, size_t n);
int site_h2_produce(struct site_conn *c); /* pump frames; 1 when nothing left */
void site_h2_free(struct site_conn *c);
void site_h2_goaway(struct site_conn *c);
bool site_h2_idle(const struct site_conn *c);
/* nghttp2 wants neither to read nor to write: the connection is done. */
bool site_h2_finished(const struct site_conn *c);
/* Nothing more is read as h2 (a GOAWAY for a flood or an error is queued):
 * stop decrypting input, send the GOAWAY, then linger or close. */
bool site_h2_read_done(const struct site_conn *c);

/* site_h2_mem.c: nghttp2's allocator (user data: the connection whose session
 * it is; any thread, but a session's blocks on its worker only). */
void *site_h2_mem_malloc(size_t n, void *ud);
void site_h2_mem_free(void *ptr, void *ud);
void *site_h2_mem_calloc(size_t nmemb, size_t size, void *ud);
void *site_h2_mem_realloc(void *ptr, size_t n, void *ud);
/* The connection has been idle a while: give its frame buffer's pages back,
 * and its stream table's while empty.  Its worker only. */
void site_h2_release(struct site_conn *c);
/* Once a second from any worker: every 10 s, unmap half of the freed
 * blocks kept for new sessions that no session took during the last 10 s
 * (all of them when few), then malloc_trim() once none is left. */
void site_h2_mem_trim(uint64_t now_ms);
/* How many freed blocks wait in the pool (a worker with nothing else to do
 * still ticks while any do, so that they are trimmed).  Any thread. */
size_t site_h2_mem_pooled(void);

/* site_files.c */
/* An absolute-form target ("https://host:port/p?q", RFC 9112 3.2.2) split
 * into its authority (up to the first '/', '?' or '#'; may be empty) and
 * the rest, which is the path and query (empty, or starting with '/', '?'
 * or '#').  False for any other form. */
bool site_target_absolute(struct site_str target, struct site_str *authority,
                          struct site_str *rest);
/* Decode and normalise a request target's path into out (NUL-terminated,
 * no leading '/', "" for the root).  Returns 0, or -400 for a path that must be
 * refused (NUL, bad escape, '..' above the root, too long). */
int site_path_normalize(const char *target, size_t n, char *out, size_t cap);
/* A normalised path (site_path_normalize's output) names a hidden file: one
 * of its segments starts with '.', outside a leading ".well-known/". */
bool site_path_hidden(const char *rel);
/* Fill rs for a GET/HEAD of rq from the root. */
void site_files_serve(struct site_worker *w, const struct site_req *rq, struct site_resp *rs);
void site_resp_init(struct site_resp *rs);
void site_resp_error(struct site_resp *rs, int status);
void site_resp_free(struct site_resp *rs);
/* Close the body's file for now: the client cannot take data yet. */
void site_resp_park(struct site_resp *rs);
/* Reopen a parked body's file: 0, -EMFILE when the site is at its file
 * budget (try later), -ESTALE when the file changed, or another -errno. */
int site_resp_unpark(struct site_worker *w, struct site_resp *rs);
/* Add "name: value" to the response's extra headers: 0, or -ENOSPC (not added)
 * when they do not fit. */
int site_resp_add_header(struct site_resp *rs, const char *name, const char *v, size_t vn);
/* Free the extra header lines (the head has been written); site_resp_free
 * does it too. */
void site_resp_drop_extra(struct site_resp *rs);
/* Copy up to n bytes of the body window into dst; returns bytes copied, or -1. */
long site_resp_read(struct site_resp *rs, char *dst, size_t n);
const char *site_status_text(int status);
struct site_cache *site_cache_new(size_t max_bytes, size_t max_file);
void site_cache_free(struct site_cache *c);
/* Exposed for unit tests. */
int site_range_parse(const char *p, size_t n, uint64_t size, uint64_t *start, uint64_t *len);
bool site_etag_match(const char *inm, size_t n, const char *etag);
/* The same with the strong comparison (If-Match, RFC 9110 8.8.3.2): a weak
 * tag ("W/...") never matches. */
bool site_etag_match_strong(const char *p, size_t n, const char *etag);
/* Whether @p rq's If-None-Match lines, read as one list, name @p etag. */
bool site_inm_match(const struct site_req *rq, const char *etag);
/* The strong ETag of a file with stat @p st, quoted, into buf (48 bytes hold
 * any); returns what snprintf returns. */
int site_etag(const struct stat *st, char *buf, size_t cap);
int site_http_date(time_t t, char *buf, size_t cap);
bool site_http_date_parse(const char *p, size_t n, time_t *out);
const char *site_mime_type(const char *path);

/* site_redirect.c */
/* Validate a Host header value; writes the host without port into out.  false when invalid. */
bool site_host_valid(const char *p, size_t n, char *out, size_t cap);
void site_redirect_serve(struct site_worker *w, const struct site_req *rq, struct site_resp *rs);

/* site_metrics.c */
void site_metrics_register(struct site *s);
void site_metrics_handshake(struct site_worker *w, gnutls_session_t session, double seconds);
void site_metrics_hs_fail(struct site_worker *w, const char *reason);
void site_metrics_request(struct site_worker *w, enum site_proto p, int status);
void site_metrics_tick(struct site_worker *w);
/* The client's address as text into @p peer ("-" when unknown); returns peer. */
const char *site_peer_name(const struct site_conn *c, char *peer, size_t cap);
void site_access_log(struct site_conn *c, const struct site_req *rq, int status, uint64_t bytes,
                     const char *proto);

/* Allocation that aborts on failure: the kit's <tlsbox/xalloc.h>. */
#define site_xmalloc tlsbox_xmalloc
#define site_xcalloc tlsbox_xcalloc
#define site_xrealloc tlsbox_xrealloc
#define site_xstrdup tlsbox_xstrdup

#endif
