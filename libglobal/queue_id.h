/* Queue IDs: the name of a message in every queue and log line.
 *
 * An ID is 7 base-32 digits of seconds, 4 of microseconds (both fixed
 * width, so byte order is arrival order) and 1..13 digits of the file's
 * inode number (no leading zero), using the upper-case alphabet
 * 0-9 A-Z without I L O U.  See doc/queue-file.md §1. */
#ifndef PETREL_QUEUE_ID_H
#define PETREL_QUEUE_ID_H
#include <stdbool.h>
#include <sys/time.h>
#include <sys/types.h>

#define QUEUE_ID_TIME_LEN 11	/* seconds + microseconds digits */
#define QUEUE_ID_MIN_LEN 12
#define QUEUE_ID_MAX_LEN 24
#define QUEUE_ID_SIZE (QUEUE_ID_MAX_LEN + 1)

/* The 32 digits in ascending order. */
extern const char queue_id_alphabet[33];

/* Formats the ID of a file created at tv with inode ino.  Seconds beyond
 * the 7-digit range (year 3058) and negative times are clamped. */
void queue_id_make(char buf[QUEUE_ID_SIZE], const struct timeval *tv,
    ino_t ino);

/* True when id is exactly a well-formed, canonical queue ID. */
bool queue_id_valid(const char *id);

/* Like queue_id_valid, also returning the parts (either may be NULL). */
bool queue_id_parse(const char *id, struct timeval *tv, ino_t *ino);

/* True when id is valid and names inode ino (false for a file copied or
 * restored under an old name). */
bool queue_id_matches_inode(const char *id, ino_t ino);

#endif
