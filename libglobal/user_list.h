/* Matching a user against a list parameter such as authorized_submit_users
 * or authorized_mailq_users: items separated by commas or white space,
 * each a user name (case-insensitive) or a type:name table (which may
 * hold "{...}" with separators inside), optionally negated with '!';
 * the first item that matches decides. */
#ifndef PETREL_USER_LIST_H
#define PETREL_USER_LIST_H
#include <sys/types.h>
#include "str.h"

/* 1: an item allows user; 0: none matched or a negated item matched;
 * -1: a table could not be read (why says which). */
int user_list_match(const char *param, const char *user, str_t *why);

/* The same for the login name of uid, or for the name unknown when uid
 * has no passwd entry; *user is the name that was matched (valid until
 * the next getpwuid/getpwnam), for the caller's message. */
int user_list_uid_match(const char *param, uid_t uid, const char *unknown,
    const char **user, str_t *why);

/* For a uid, as the administration tools check their caller
 * against authorized_mailq_users or authorized_flush_users: root is
 * always allowed; a uid without a passwd entry is the user "".  When
 * the list refuses, why says who is not allowed by which parameter. */
int user_list_uid_allowed(const char *param, uid_t uid, str_t *why);

#endif
