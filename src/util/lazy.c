/* lazy.c — dlopen on first use (see lazy.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/lazy.h"

static _Noreturn void lazy_die(const char *what, const char *soname)
{
	const char *e = dlerror();
	fprintf(stderr, "paddock: cannot load %s from %s: %s (is its package installed? see scripts/install-deps.sh)\n",
		what, soname, e ? e : "unknown error");
	exit(125);
}

static void *lazy_open(struct pd_lazy_lib *lib)
{
	void *h = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
	if (!h) {
		/* RTLD_LOCAL: the library's symbols never interpose on ours (we define the same
		 * names); a second dlopen of a racing thread only bumps the reference count */
		h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
		if (h)
			__atomic_store_n(&lib->handle, h, __ATOMIC_RELEASE);
	}
	return h;
}

int pd_lazy_load(struct pd_lazy_lib *lib, const char **ret_why)
{
	if (lazy_open(lib))
		return 0;
	const char *e = dlerror();
	*ret_why = e ? e : "unknown error";
	return -ELIBACC;
}

void *pd_lazy_sym(struct pd_lazy_lib *lib, const char *name)
{
	void *h = lazy_open(lib);
	if (!h)
		lazy_die("the library", lib->soname);
	void *f = dlsym(h, name);
	if (!f)
		lazy_die(name, lib->soname);
	return f;
}
