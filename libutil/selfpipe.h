/* Signals turned into events: the self-pipe, written once for every
 * process that must act on a signal outside its handler (master, the
 * daemon skeleton, the test servers).
 *
 * A caught signal sets a flag for its number and writes one byte, the
 * signal number, into a pipe whose read end the process watches with
 * its event loop or poll().  The handler does nothing else (it keeps
 * errno); acting on the signal happens in the program's own time.
 * Bytes are dropped when the pipe is full (a wake-up is pending then
 * anyway); flags are never lost.  Two ways to consume them, never both
 * in one program: take the flags after draining the pipe
 * (selfpipe_drain, selfpipe_take), or read the signals one by one in
 * arrival order (selfpipe_read).
 *
 * There is one self-pipe per process.  Both ends are non-blocking and
 * close-on-exec: a child that executes another program does not
 * inherit them.  (A forked child that does not execute shares them
 * with its parent, as with any pipe.) */
#ifndef PETREL_SELFPIPE_H
#define PETREL_SELFPIPE_H
#include <stdbool.h>

/* Creates the pipe; once per process (again: nothing is done).  0, or
 * -1 with errno. */
int selfpipe_open(void);
/* Catches sig with the self-pipe's handler: sa_flags as for sigaction
 * (SA_RESTART, SA_NOCLDSTOP...), no signal blocked during the handler.
 * 0, or -1 with errno (EINVAL for a signal number out of range). */
int selfpipe_catch(int sig, int sa_flags);
/* The read end to watch for input, or -1 before selfpipe_open. */
int selfpipe_fd(void);

/* Has sig been caught since it was last taken?  selfpipe_raised only
 * looks; selfpipe_take also clears it. */
bool selfpipe_raised(int sig);
bool selfpipe_take(int sig);
/* Empties the pipe (the flags stay). */
void selfpipe_drain(void);
/* The next signal caught, in arrival order, from the pipe: its number,
 * or 0 when the pipe is empty.  The flags stay. */
int selfpipe_read(void);

#endif
