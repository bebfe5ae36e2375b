/* tlsboxd --generate-dh BITS: one DH parameter generation in a fresh process.
 *
 * The dhparam plugin generates in a child process so that a stop can kill
 * it (GnuTLS's generator cannot be interrupted).  A child forked from the
 * multi-threaded daemon may only make async-signal-safe calls: a lock that
 * another thread held at fork() (the allocator's, GnuTLS's) stays locked in
 * the child forever.  So the child only sets its priority and execs the
 * daemon's own binary (/proc/self/exe) in this mode, which starts clean. */
#ifndef TLSBOX_CORE_DH_GENERATE_H
#define TLSBOX_CORE_DH_GENERATE_H

/* The option, as argv[1]; argv[2] is the size in bits. */
#define TLSBOX_DH_GENERATE_OPTION "--generate-dh"

/* Generate @p bits_arg-bit parameters (a decimal number, 2048-8192) and
 * write them as PKCS#3 PEM to standard output.  Returns the process exit
 * status: 0 written, 1 write failed, 2 bad size or generation failed (a
 * line on standard error says which).  Single-threaded, at process start. */
int dh_generate_main(const char *bits_arg);

#endif
