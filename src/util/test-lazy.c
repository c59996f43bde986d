/* test-lazy.c — libraries loaded on first use (lazy.h): a missing one is an error a caller can
 * report, and a present one gives the real functions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "util/lazy.h"

static void test_missing_library_is_an_error(void **state)
{
	(void)state;
	struct pd_lazy_lib lib = {.soname = "libpaddock-no-such-library.so.0"};
	const char *why = NULL;
	assert_int_equal(pd_lazy_load(&lib, &why), -ELIBACC);
	assert_non_null(why);
	assert_non_null(strstr(why, "libpaddock-no-such-library.so.0"));
	assert_null(lib.handle);
}

/* the network's libraries load on demand, and a shim's first call reaches the library */
static void test_network_libraries_load(void **state)
{
	(void)state;
	const char *why = NULL;
	assert_int_equal(pd_lazy_load_slirp(&why), 0);
	assert_int_equal(pd_lazy_load_http_parser(&why), 0);
	struct pd_lazy_lib lib = {.soname = "libslirp.so.0"};
	assert_int_equal(pd_lazy_load(&lib, &why), 0);
	assert_ptr_equal(pd_lazy_sym(&lib, "slirp_version_string"), pd_lazy_sym(&lib, "slirp_version_string"));
	const char *(*version)(void) = (const char *(*)(void))pd_lazy_sym(&lib, "slirp_version_string");
	assert_true(strlen(version()) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library_is_an_error),
		cmocka_unit_test(test_network_libraries_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
