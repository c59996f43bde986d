/* test-hex.c — hex_digit / hex_decode: lowercase digits only, exact length, every byte value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "util/util.h"

static void test_digits(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++) {
		int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		assert_int_equal(hex_digit((char)c), want);
	}
}

static void test_decode_round_trip_and_refusals(void **state)
{
	(void)state;
	uint8_t in[256], out[256];
	char hex[513];
	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	hex_encode(in, sizeof(in), hex);
	assert_int_equal(hex_decode(hex, out, sizeof(out)), 0);
	assert_memory_equal(in, out, sizeof(in));
	uint8_t two[2];
	assert_int_equal(hex_decode("0aF0", two, 2), -EINVAL);  /* uppercase */
	assert_int_equal(hex_decode("0a f", two, 2), -EINVAL);  /* not a digit */
	assert_int_equal(hex_decode("0a0", two, 2), -EINVAL);   /* short */
	assert_int_equal(hex_decode("0a0b0", two, 2), -EINVAL); /* long */
	assert_int_equal(hex_decode("\xff\x30\x30\x30", two, 2), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digits),
		cmocka_unit_test(test_decode_round_trip_and_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
