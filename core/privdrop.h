/* Privilege drop: tlsboxd never serves the network as root, and keeps no
 * capability once its ports are bound.  Called from main() only. */
#ifndef TLSBOX_CORE_PRIVDROP_H
#define TLSBOX_CORE_PRIVDROP_H

/* First thing in main(), before any thread exists: umask 077 and
 * PR_SET_NO_NEW_PRIVS, both inherited by every thread started later. */
void privdrop_early(void);

/* Before the store is opened (nothing is written in @state_dir yet), from
 * the main thread: started as root, note what @state_dir holds for
 * privdrop_user(), and refuse one that exists, holds entries tlsboxd does
 * not make there (the store, its -wal/-shm/-journal, control.sock, and www/
 * beside a store) and does not belong to the service user @user (--user or
 * --set core.user; NULL: not named, so the store's core.user, read
 * read-only and immutable (nothing written, no -wal or -shm made), else
 * the default "tlsbox"; a store that cannot be read so, or whose -wal is
 * not empty, is left to privdrop_user() to check once it is open; a
 * directory of root's is refused at once, no service user being root).
 * Refused too: a @state_dir below a directory that user may not pass
 * through (it could not open its store once it is that user).
 * Started as anyone else, there is nothing to give: 0.  Returns 0 or -1
 * with *err set naming the directory and what to do (caller frees). */
int privdrop_check_state_dir(const char *state_dir, const char *user, char **err);

/* Before the first thread starts (the store is open, the control socket
 * bound): started as root, give @user the state directory (refused as
 * privdrop_check_state_dir() says, the user now known, and refused when
 * a directory above @state_dir does not let @user through), the store's files
 * in it and @control_socket (may be NULL), then become @user (its uid and
 * primary gid, no supplementary groups) keeping only CAP_NET_BIND_SERVICE,
 * for the ports plugins bind when they start; the bounding set keeps
 * nothing else.  Started as anyone else, clear the ambient and inheritable
 * sets and keep at most CAP_NET_BIND_SERVICE.  Returns 0 or -1 with *err
 * set (caller frees). */
int privdrop_user(const char *user, const char *state_dir, const char *control_socket, char **err);

/* After every plugin has started: every thread of the process, this one and
 * those started since privdrop_user() (threads already there then are not
 * tlsboxd's: qemu-user's own), empties its capability sets; checked
 * in /proc for 2 s at most.  Returns 0, or -1 with *err naming a thread that
 * still holds one (it blocks TLSBOX_SIGNAL_CAPDROP): the caller must stop. */
int privdrop_finish(char **err);

#endif
