/* thread.h — helper threads of the supervisor (network, console, resolver, copy-in). */
#pragma once

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread: signals stay with the caller's
 * main loop (a thread-directed SIGPIPE becomes EPIPE for the thread that wrote). attr may be
 * NULL. Returns 0 or -errno. */
int thread_start_quiet(pthread_t *ret, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
