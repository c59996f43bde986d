/* error.h — an error object that carries errno and a message with context (crun's
 * libcrun_error_t style).
 *
 * A failing function returns a negative errno and, when given a non-NULL pd_err, fills it
 * with what failed and on what. Callers add context on the way up with pd_err_prefix().
 * Only the CLI and the supervisor print errors, once, with pd_err_print(). */
#pragma once
#include <stdio.h>

#include "util.h"

typedef struct pd_err {
	int code;        /* positive errno, 0 when unset */
	char msg[1024];  /* "what failed: on what: strerror (hint)" */
} pd_err;

/* Sets *err (if non-NULL) to "fmt...: strerror(errnum)" and returns -errnum.
 * errnum may be given positive or negative. */
int pd_error(pd_err *err, int errnum, const char *fmt, ...) _printf_(3, 4);
/* Like pd_error without the strerror suffix (for validation errors). */
int pd_error_msg(pd_err *err, int errnum, const char *fmt, ...) _printf_(3, 4);
/* Prepends "fmt...: " to an existing message; returns -err->code. */
int pd_err_prefix(pd_err *err, const char *fmt, ...) _printf_(2, 3);
/* Prints "paddock: <msg>" to stderr. */
void pd_err_print(const pd_err *err);
/* s with C0/C1 controls, bidi and line marks and bytes that are not UTF-8 shown as \xNN. */
void pd_fputs_escaped(const char *s, FILE *f);
/* The same for len bytes (NULs included, shown as \x00); s[len] must be readable and not a
 * UTF-8 continuation byte (a NUL or a newline ending a line will do). */
void pd_fwrite_escaped(const char *s, size_t len, FILE *f);
