/* util.h — cleanup helpers, ownership moves and small inline helpers shared by every module.
 *
 * Resource rules (STYLE.md): every fd is O_CLOEXEC, every owned resource carries a cleanup
 * attribute, ownership that leaves a scope is moved with TAKE_FD()/TAKE_PTR(). */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_ __attribute__((warn_unused_result))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closedirp(DIR **d) { if (*d) closedir(*d); }
/* frees a NULL-terminated vector of strings */
void strv_free(char **v);
static inline void strv_freep(char ***v) { strv_free(*v); }

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_strv_ _cleanup_(strv_freep)

/* Move ownership out of a cleanup-managed variable. */
#define TAKE_FD(fd) ({ int _fd_ = (fd); (fd) = -1; _fd_; })
#define TAKE_PTR(p) ({ __typeof__(p) _p_ = (p); (p) = NULL; _p_; })

/* Allocation failure is not recoverable in paddock: these abort with a message. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);

/* NULL-terminated string vectors */
size_t strv_len(char *const *v);
char **strv_append(char **v, const char *s); /* returns the new vector */
char **strv_copy(char *const *v);
bool strv_contains(char *const *v, const char *s);
/* strv_append unless v already holds s. */
char **strv_append_unique(char **v, const char *s);

/* CLOCK_MONOTONIC in milliseconds (deadlines, timeouts, progress) */
int64_t mono_ms(void);

/* Lowercase hex: the value of one digit ('0'-'9', 'a'-'f'), or -1 */
int hex_digit(char c);
/* n bytes as 2n lowercase digits and a NUL (out holds 2n + 1) */
void hex_encode(const uint8_t *in, size_t n, char *out);
/* exactly 2n lowercase digits into n bytes; -EINVAL for another length or another character */
int hex_decode(const char *hex, uint8_t *out, size_t n);

static inline bool streq(const char *a, const char *b) { return strcmp(a, b) == 0; }
/* path equals dir or lies beneath it ("/proc/x" is under "/proc", "/procx" is not) */
static inline bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
/* A path a box may have something mounted or copied at: absolute, normalised (no empty, "."
 * or ".." component, no trailing '/'), not "/" itself and not in /proc, /dev or /sys. */
bool box_target_path_valid(const char *path);
static inline bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}
