/* Descriptor housekeeping for processes that start or become daemons. */
#ifndef PETREL_FDUTIL_H
#define PETREL_FDUTIL_H

/* Makes sure 0, 1 and 2 are open (on /dev/null when they were closed), so
 * a descriptor opened later never lands there and receives someone's
 * error messages.  Exits if /dev/null cannot be opened. */
void fd_sane_stdio(void);

/* Closes every descriptor from first up (before exec: a child must not
 * inherit queue files or sockets). */
void fd_close_from(int first);

#endif
