/* wsalias.h — paddock-init's ws-alias built-in (see wsalias.c). */
#pragma once

#include "util/util.h"

/* Runs the built-in with argv (argv[0] is WSALIAS_BUILTIN); returns its exit status. */
int guest_wsalias_main(char *const *argv);
