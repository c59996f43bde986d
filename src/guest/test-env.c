/* test-env.c — unit tests for the pure parts of sessions: users, environments, working
 * directories and exit statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>

#include "guest/env.h"

static const struct guest_user agent = {.name = "agent", .home = "/home/agent", .uid = 1000, .gid = 1000};

static void test_user_for(void **state)
{
	struct guest_user u;
	guest_user_for(NULL, 1000, 1001, &u);
	assert_string_equal(u.name, "agent");
	assert_string_equal(u.home, "/home/agent");
	assert_int_equal(u.uid, 1000);
	assert_int_equal(u.gid, 1001);
	assert_false(u.root);
	guest_user_for("agent", 7, 8, &u);
	assert_int_equal(u.uid, 7);
	assert_false(u.root);
	guest_user_for("root", 1000, 1000, &u);
	assert_string_equal(u.name, "root");
	assert_string_equal(u.home, "/root");
	assert_int_equal(u.uid, 0);
	assert_int_equal(u.gid, 0);
	assert_true(u.root);
}

static void assert_strv(char **v, const char *const *want)
{
	size_t n = 0;
	for (; want[n]; n++) {
		assert_non_null(v[n]);
		assert_string_equal(v[n], want[n]);
	}
	assert_null(v[n]);
}

static void test_env_pipe(void **state)
{
	_cleanup_strv_ char **v = guest_env_build(&agent, "/bin/sh", false, NULL);
	const char *const want[] = {
		"PATH=" GUEST_PATH, "HOME=/home/agent", "USER=agent", "LOGNAME=agent",
		"SHELL=/bin/sh", "LANG=C.UTF-8", NULL};
	assert_strv(v, want);
}

static void test_env_tty_root(void **state)
{
	struct guest_user root;
	guest_user_for("root", 1000, 1000, &root);
	_cleanup_strv_ char **v = guest_env_build(&root, "/bin/bash", true, NULL);
	const char *const want[] = {
		"PATH=" GUEST_PATH, "HOME=/root", "USER=root", "LOGNAME=root",
		"SHELL=/bin/bash", "LANG=C.UTF-8", "TERM=xterm-256color", NULL};
	assert_strv(v, want);
}

static void test_env_merge(void **state)
{
	/* overrides replace in place, new keys append, the last duplicate wins, '=' in values
	 * and empty values are kept verbatim, and a key that is a prefix of another is its own */
	const char *const req[] = {"LANG=de_DE.UTF-8", "FOO=1", "PATH=/x:/y", "FOO=2=3",
				   "EMPTY=", "PAT=no", "TERM=dumb", NULL};
	_cleanup_strv_ char **v = guest_env_build(&agent, "/bin/sh", false, req);
	const char *const want[] = {
		"PATH=/x:/y", "HOME=/home/agent", "USER=agent", "LOGNAME=agent", "SHELL=/bin/sh",
		"LANG=de_DE.UTF-8", "FOO=2=3", "EMPTY=", "PAT=no", "TERM=dumb", NULL};
	assert_strv(v, want);
	assert_string_equal(guest_env_get(v, "FOO"), "2=3");
	assert_string_equal(guest_env_get(v, "PAT"), "no");
	assert_string_equal(guest_env_get(v, "EMPTY"), "");
	assert_null(guest_env_get(v, "FO"));
	assert_null(guest_env_get(v, "NOPE"));
}

static void test_env_set(void **state)
{
	_cleanup_strv_ char **v = NULL;
	v = guest_env_set(v, "A=1");
	v = guest_env_set(v, "AB=2");
	v = guest_env_set(v, "A=3");
	const char *const want[] = {"A=3", "AB=2", NULL};
	assert_strv(v, want);
	assert_null(guest_env_get(NULL, "A"));
}

static void test_cwd(void **state)
{
	char *with_home[] = {"HOME=/home/agent", NULL};
	char *rel_home[] = {"HOME=relative", NULL};
	char *no_home[] = {"PATH=/bin", NULL};
	bool strict;
	assert_string_equal(guest_cwd("/work", with_home, &strict), "/work");
	assert_true(strict);
	assert_string_equal(guest_cwd(NULL, with_home, &strict), "/home/agent");
	assert_false(strict);
	assert_string_equal(guest_cwd(NULL, rel_home, &strict), "/");
	assert_string_equal(guest_cwd(NULL, no_home, &strict), "/");
	assert_false(strict);
}

static void test_exit_status(void **state)
{
	assert_int_equal(guest_exit_status(W_EXITCODE(0, 0)), 0);
	assert_int_equal(guest_exit_status(W_EXITCODE(7, 0)), 7);
	assert_int_equal(guest_exit_status(W_EXITCODE(255, 0)), 255);
	assert_int_equal(guest_exit_status(W_EXITCODE(0, SIGTERM)), 143);
	assert_int_equal(guest_exit_status(W_EXITCODE(0, SIGKILL)), 137);
	assert_int_equal(guest_exit_status(W_EXITCODE(0, SIGINT) | WCOREFLAG), 130);
	assert_int_equal(guest_exit_status(W_EXITCODE(0, SIGRTMAX)), 128 + SIGRTMAX);
	assert_int_equal(guest_exit_status(W_STOPCODE(SIGSTOP)), -1);
	assert_int_equal(guest_exit_status(0xffff), -1); /* continued */
}

static void test_exit_status_real(void **state)
{
	/* the encoding of a real wait status, not only of the macros */
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		_exit(1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(guest_exit_status(st), 143);
	pid = fork();
	if (pid == 0)
		_exit(42);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(guest_exit_status(st), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_for),    cmocka_unit_test(test_env_pipe),
		cmocka_unit_test(test_env_tty_root), cmocka_unit_test(test_env_merge),
		cmocka_unit_test(test_env_set),     cmocka_unit_test(test_cwd),
		cmocka_unit_test(test_exit_status), cmocka_unit_test(test_exit_status_real),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
