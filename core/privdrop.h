/* Privilege drop: tlsboxd never serves the network as root. */
#ifndef TLSBOX_CORE_PRIVDROP_H
#define TLSBOX_CORE_PRIVDROP_H

/* First thing in main(), before any thread exists: umask 077 and
 * PR_SET_NO_NEW_PRIVS, both inherited by every thread started later. */
void privdrop_early(void);

/* After the ports are bound and the store is open: started as root, become
 * @user (its uid and primary gid, no supplementary groups, hence no
 * capability) after giving it the state directory's own files and the
 * control socket; started as anyone else, drop the capabilities this thread
 * holds (systemd's AmbientCapabilities=).  Returns 0 or -1 with *err set
 * (caller frees). */
int privdrop_apply(const char *user, const char *state_dir, const char *control_socket, char **err);

#endif
