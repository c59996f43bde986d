/* wstar.h — paddock-init's tar built-in (see wstar.c). */
#pragma once

/* Runs the built-in with argv (argv[0] is WSTAR_BUILTIN); returns its exit status. */
int guest_wstar_main(char *const *argv);
