/* thread.c — see thread.h. Not part of paddock-init (a single-threaded static program). */
#include <signal.h>

#include "util/thread.h"

int thread_start_quiet(pthread_t *ret, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(ret, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -e;
}
