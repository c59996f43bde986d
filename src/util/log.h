/* log.h — debug logging (PADDOCK_DEBUG=1) to stderr. Errors are not logged here: they travel
 * up in pd_err and are printed once by the CLI or the supervisor. */
#pragma once

#include "util.h"

extern int pd_debug_enabled;
void pd_log_init(void);
void pd_debug_(const char *fmt, ...) _printf_(1, 2);
#define pd_debug(...) do { if (pd_debug_enabled) pd_debug_(__VA_ARGS__); } while (0)
