/* test-store.c — unit tests for sandbox state on disk: spec round trip, status derivation
 * from the supervisor lock, atomic name reservation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "proto/proto.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"

static void test_spec_roundtrip(void **state)
{
	struct box_bind binds[] = {{"/h", "/b", true}};
	char *env[] = {"A=1", "B=two words", NULL};
	struct box_spec s = {.name = "box-1", .backend = "ns", .user = "root", .memory = 1ull << 30,
			     .disk = 5 << 20, .cpus_milli = 1500, .pids = 99, .binds = binds, .n_binds = 1,
			     .env = env, .workdir = "/w", .created = 1700000000, .accel = "tcg",
			     .guest_aslr = true};
	char *json = box_spec_to_json(&s);
	struct box_spec d;
	assert_int_equal(box_spec_from_json(json, &d, NULL), 0);
	assert_string_equal(d.name, "box-1");
	assert_string_equal(d.user, "root");
	assert_int_equal(d.memory, 1ull << 30);
	assert_int_equal(d.cpus_milli, 1500);
	assert_int_equal(d.pids, 99);
	assert_int_equal(d.n_binds, 1);
	assert_true(d.binds[0].readonly);
	assert_string_equal(d.env[1], "B=two words");
	assert_string_equal(d.workdir, "/w");
	assert_string_equal(d.accel, "tcg");
	assert_true(d.guest_aslr);
	box_spec_free(&d);
	free(json);
	/* without --accel and --guest-aslr: none recorded, none read back */
	s.accel = NULL;
	s.guest_aslr = false;
	json = box_spec_to_json(&s);
	assert_null(strstr(json, "guest_aslr"));
	assert_int_equal(box_spec_from_json(json, &d, NULL), 0);
	assert_null(d.accel);
	assert_false(d.guest_aslr);
	box_spec_free(&d);
	free(json);
}

static void test_spec_rejects(void **state)
{
	struct box_spec d;
	assert_int_equal(box_spec_from_json("{", &d, NULL), -EINVAL);
	assert_int_equal(box_spec_from_json("{\"name\":\"../etc\"}", &d, NULL), -EINVAL);
	assert_int_equal(box_spec_from_json("{\"name\":\"x\",\"binds\":[{\"host\":1}]}", &d, NULL), -EINVAL);
}

static void test_status_and_create(void **state)
{
	char tmpl[] = "/tmp/pd-store-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	setenv("PADDOCK_HOME", tmpl, 1);
	char *home = NULL;
	assert_int_equal(store_home(&home, NULL), 0);
	struct box_spec s = {.name = "b1", .backend = "ns", .user = "agent"};
	assert_int_equal(store_create(home, &s, NULL), 0);
	pd_err err = {0};
	assert_int_equal(store_create(home, &s, &err), -EEXIST);
	char *dir = store_box_dir(home, "b1");
	assert_int_equal(store_status(dir, NULL), BOX_STATUS_CREATED);
	/* a supervisor that says "running" and holds its lock */
	struct box_state st = {.status = BOX_STATUS_RUNNING, .supervisor_pid = 1, .last_exit = -1};
	assert_int_equal(store_save_state(dir, &st, NULL), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = store_lock(dir, "supervisor.lock", false);
		pause();
		_exit(fd < 0);
	}
	usleep(100000);
	assert_int_equal(store_status(dir, NULL), BOX_STATUS_RUNNING);
	/* SIGKILL the "supervisor": the box is dead, not running */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(store_status(dir, NULL), BOX_STATUS_DEAD);
	char **names = NULL;
	assert_int_equal(store_list(home, &names, NULL), 0);
	assert_int_equal(strv_len(names), 1);
	strv_free(names);
	assert_int_equal(store_remove(dir, NULL), 0);
	free(dir);
	rm_rf(tmpl);
	free(home);
}

static void test_merge_exec(void **state)
{
	char *senv[] = {"A=spec", "B=spec", NULL};
	struct box_spec s = {.name = "x", .user = "agent", .env = senv, .workdir = "/work"};
	struct proto_exec req = {.argc = 1, .envc = 1, .tty = false};
	req.argv[0] = "ls";
	req.envp[0] = "B=req";
	struct proto_buf b = {0};
	sup_merge_exec(&s, &req, &b);
	struct proto_frame f = {.hdr = {.type = PROTO_EXEC, .len = (uint32_t)b.len}, .payload = b.data};
	struct proto_exec *d = malloc(sizeof(*d));
	assert_int_equal(proto_decode_exec(&f, d), 0);
	assert_string_equal(d->user, "agent");
	assert_string_equal(d->cwd, "/work");
	assert_int_equal(d->envc, 3);
	assert_string_equal(d->envp[2], "B=req"); /* the request's value comes last and wins */
	free(d);
	proto_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_roundtrip), cmocka_unit_test(test_spec_rejects),
		cmocka_unit_test(test_status_and_create), cmocka_unit_test(test_merge_exec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
