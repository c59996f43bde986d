/* log.c — debug logging. */
#include <stdarg.h>
#include <time.h>

#include "log.h"

int pd_debug_enabled;

void pd_log_init(void)
{
	const char *e = getenv("PADDOCK_DEBUG");
	pd_debug_enabled = e && *e && !streq(e, "0");
}

void pd_debug_(const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[%ld.%06ld %d] %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000, (int)getpid(), buf);
}
