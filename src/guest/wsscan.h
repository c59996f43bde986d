/* wsscan.h — paddock-init's ws-scan built-in (see wsscan.c). */
#pragma once

#include "util/util.h"

/* Runs the built-in with argv (argv[0] is WSSCAN_BUILTIN); returns its exit status. */
int guest_wsscan_main(char *const *argv);
