/* test-ws-path.c — the pure name checks: path syntax, symlink targets, host-executing paths,
 * gitattributes drivers and the terminal escaper. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "workspace/ws_path.h"

static const struct ws_limits lim = WS_LIMITS_DEFAULT;

static enum ws_reason chk(const char *p)
{
	return ws_path_check(p, strlen(p), &lim);
}

static void test_path_good(void **state)
{
	assert_int_equal(chk("a"), WS_OK);
	assert_int_equal(chk("a/b/c.txt"), WS_OK);
	assert_int_equal(chk(".hidden/..x/x.."), WS_OK);
	assert_int_equal(chk("sp ace/ünï"), WS_OK);
}

static void test_path_bad_classes(void **state)
{
	assert_int_equal(chk(""), WS_R_EMPTY);
	assert_int_equal(chk("/etc/passwd"), WS_R_ABSOLUTE);
	assert_int_equal(chk("../x"), WS_R_DOTDOT);
	assert_int_equal(chk("a/../../x"), WS_R_DOTDOT);
	assert_int_equal(chk("a/.."), WS_R_DOTDOT);
	assert_int_equal(chk("./a"), WS_R_DOT);
	assert_int_equal(chk("a/./b"), WS_R_DOT);
	assert_int_equal(chk("a//b"), WS_R_EMPTY_COMPONENT);
	assert_int_equal(chk("a/"), WS_R_EMPTY_COMPONENT);
	assert_int_equal(chk("a\nb"), WS_R_CONTROL_CHAR);
	assert_int_equal(chk("a\x1b[31mb"), WS_R_CONTROL_CHAR);
	assert_int_equal(chk("a\x7f"), WS_R_CONTROL_CHAR);
	assert_int_equal(chk("x/" WS_TMP_PREFIX "abc"), WS_R_RESERVED_NAME);
	assert_int_equal(ws_path_check("a\0b", 3, &lim), WS_R_CONTROL_CHAR); /* embedded NUL */
}

static void test_path_limits(void **state)
{
	char name[300];
	memset(name, 'n', 256);
	name[256] = '\0';
	assert_int_equal(chk(name), WS_R_NAME_TOO_LONG);
	name[255] = '\0';
	assert_int_equal(chk(name), WS_OK);
	_cleanup_free_ char *deep = xmalloc(2 * 300 + 1);
	deep[0] = '\0';
	for (int i = 0; i < 257; i++)
		strcat(deep, i ? "/d" : "d");
	assert_int_equal(chk(deep), WS_R_TOO_DEEP);
	_cleanup_free_ char *longp = xmalloc(5000);
	memset(longp, 'a', 4999);
	for (int i = 200; i < 4999; i += 200)
		longp[i] = '/';
	longp[4999] = '\0';
	assert_int_equal(chk(longp), WS_R_PATH_TOO_LONG);
	struct ws_limits small = lim;
	small.max_depth = 2;
	assert_int_equal(ws_path_check("a/b/c", 5, &small), WS_R_TOO_DEEP);
}

static void test_normalize(void **state)
{
	char *p = NULL;
	assert_int_equal(ws_path_normalize("./a/b/", &lim, &p), WS_OK);
	assert_string_equal(p, "a/b");
	free(p);
	assert_int_equal(ws_path_normalize("././x", &lim, &p), WS_OK);
	assert_string_equal(p, "x");
	free(p);
	assert_int_equal(ws_path_normalize(".", &lim, &p), WS_R_ROOT);
	assert_int_equal(ws_path_normalize("./", &lim, &p), WS_R_ROOT);
	assert_int_equal(ws_path_normalize("", &lim, &p), WS_R_EMPTY);
	assert_int_equal(ws_path_normalize("/", &lim, &p), WS_R_ABSOLUTE);
	assert_int_equal(ws_path_normalize("./../x", &lim, &p), WS_R_DOTDOT);
	assert_int_equal(ws_path_normalize(".//x", &lim, &p), WS_R_ABSOLUTE);
	assert_true(ws_path_under("a/b", "a"));
	assert_false(ws_path_under("ab", "a"));
	assert_true(ws_path_under("a", "a"));
}

static void test_symlink_targets(void **state)
{
	assert_int_equal(ws_symlink_check("l", "a", &lim), WS_OK);
	assert_int_equal(ws_symlink_check("d/l", "../a", &lim), WS_OK);
	assert_int_equal(ws_symlink_check("d/e/l", "../../x/y", &lim), WS_OK);
	assert_int_equal(ws_symlink_check("d/l", "..", &lim), WS_OK); /* the root itself */
	assert_int_equal(ws_symlink_check("l", "./a/./b/", &lim), WS_OK);
	assert_int_equal(ws_symlink_check("l", "/etc/passwd", &lim), WS_R_LINK_ABSOLUTE);
	assert_int_equal(ws_symlink_check("l", "..", &lim), WS_R_LINK_ESCAPES);
	assert_int_equal(ws_symlink_check("d/l", "../../x", &lim), WS_R_LINK_ESCAPES);
	assert_int_equal(ws_symlink_check("l", "", &lim), WS_R_LINK_EMPTY);
	assert_int_equal(ws_symlink_check("l", "a\x1b", &lim), WS_R_CONTROL_CHAR);
	/* lexically inside, but through another symlink it could climb out */
	assert_int_equal(ws_symlink_check("l", "a/../b", &lim), WS_R_LINK_DOTDOT_AFTER_NAME);
	assert_int_equal(ws_symlink_check("d/l", "x/../../..", &lim), WS_R_LINK_DOTDOT_AFTER_NAME);
}

static void test_exec_classes(void **state)
{
	assert_int_equal(ws_path_exec_class(".git/hooks/post-checkout", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class(".git/hooks", true), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class("sub/.git/hooks/pre-commit", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class(".git/modules/m/hooks/x", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class(".git/config", false), WS_EXEC_GIT_CONFIG);
	assert_int_equal(ws_path_exec_class(".git/modules/m/config", false), WS_EXEC_GIT_CONFIG);
	assert_int_equal(ws_path_exec_class(".git/info/attributes", false), WS_EXEC_GIT_ATTRIBUTES);
	assert_int_equal(ws_path_exec_class(".git", false), WS_EXEC_GIT_LINK);
	assert_int_equal(ws_path_exec_class(".git", true), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".git/commondir", false), WS_EXEC_GIT_LINK);
	/* the rest of .git is git data the host trusts: flagged too (apply --branch brings commits) */
	assert_int_equal(ws_path_exec_class(".git/objects/ab/cdef", false), WS_EXEC_GIT_INTERNAL);
	assert_int_equal(ws_path_exec_class(".git/refs/heads/main", false), WS_EXEC_GIT_INTERNAL);
	assert_int_equal(ws_path_exec_class("src/.gitattributes", false), WS_EXEC_GIT_ATTRIBUTES);
	assert_int_equal(ws_path_exec_class(".gitmodules", false), WS_EXEC_GITMODULES);
	assert_int_equal(ws_path_exec_class("sub/.envrc", false), WS_EXEC_ENVRC);
	/* the project's own ignore rules (only the root's are read) */
	assert_int_equal(ws_path_exec_class(".paddockignore", false), WS_EXEC_IGNORE_RULES);
	assert_int_equal(ws_path_exec_class(".PaddockIgnore", false), WS_EXEC_IGNORE_RULES);
	assert_int_equal(ws_path_exec_class("sub/.paddockignore", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".vscode/tasks.json", false), WS_EXEC_VSCODE);
	assert_int_equal(ws_path_exec_class(".vscode/settings.json", false), WS_EXEC_VSCODE);
	assert_int_equal(ws_path_exec_class(".vscode/launch.json", false), WS_EXEC_VSCODE);
	assert_int_equal(ws_path_exec_class(".vscode/extensions.json", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".vscode", true), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".vscode", false), WS_EXEC_VSCODE); /* symlinked dir */
	assert_int_equal(ws_path_exec_class(".devcontainer/devcontainer.json", false), WS_EXEC_DEVCONTAINER);
	assert_int_equal(ws_path_exec_class(".devcontainer.json", false), WS_EXEC_DEVCONTAINER);
	assert_int_equal(ws_path_exec_class(".idea/workspace.xml", false), WS_EXEC_IDEA);
	assert_int_equal(ws_path_exec_class(".husky/pre-commit", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class(".husky/_/h", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class("web/.husky", true), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class(".githooks/pre-push", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class(".pre-commit-config.yaml", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class("lefthook.yml", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class(".lefthook.yml", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class("docs/lefthook.yml", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".HUSKY/pre-commit", false), WS_EXEC_HOOK_MANAGER);
	assert_int_equal(ws_path_exec_class("Makefile", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class(".env", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class("src/main.c", false), WS_EXEC_NONE);
}

static void test_exec_folding(void **state)
{
	assert_int_equal(ws_path_exec_class(".GIT/Hooks/x", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class(".git/hoo\xe2\x84\xaas/x", false), WS_EXEC_GIT_HOOK); /* KELVIN SIGN */
	assert_int_equal(ws_path_exec_class(".g\xe2\x80\x8cit/config", false), WS_EXEC_GIT_CONFIG); /* ZWNJ */
	assert_int_equal(ws_path_exec_class(".git/hook\xc5\xbf/x", false), WS_EXEC_GIT_HOOK); /* LONG S */
	assert_int_equal(ws_path_exec_class(".ENVRC", false), WS_EXEC_ENVRC);
	assert_int_equal(ws_path_exec_class(".git\xef\xbb\xbf/config", false), WS_EXEC_GIT_CONFIG); /* BOM */
	assert_int_equal(ws_path_exec_class(".g\xc2\xadit/config", false), WS_EXEC_GIT_CONFIG); /* SOFT HYPHEN */
	assert_int_equal(ws_path_exec_class(".git/ho\xef\xb8\x8foks/x", false), WS_EXEC_GIT_HOOK); /* VS16 */
	assert_int_equal(ws_path_exec_class(".envrc\xf3\xa0\x80\x81", false), WS_EXEC_ENVRC); /* TAG */
	assert_int_equal(ws_path_exec_class(".vs\xcd\x8f" "code/tasks.json", false), WS_EXEC_VSCODE); /* CGJ */
	assert_int_equal(ws_path_exec_class(".git\xc3\xa9/config", false), WS_EXEC_NONE); /* e-acute: a letter */
}

/* core.hooksPath inside the project: what lies under it is a git hook (folded, with or
 * without ./ and a trailing slash); cleared, it is an ordinary path again */
static void test_exec_hook_dirs(void **state)
{
	char *dirs[] = {"./tools/Hooks/", NULL};
	ws_exec_set_hook_dirs(dirs);
	assert_int_equal(ws_path_exec_class("tools/hooks/pre-commit", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class("TOOLS/hooks", true), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class("tools/hooksx/pre-commit", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class("tools/other", false), WS_EXEC_NONE);
	char *root[] = {".", NULL};
	ws_exec_set_hook_dirs(root);
	assert_int_equal(ws_path_exec_class("pre-commit", false), WS_EXEC_GIT_HOOK);
	assert_int_equal(ws_path_exec_class("README", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class("src/pre-commit", false), WS_EXEC_NONE);
	ws_exec_set_hook_dirs(NULL);
	assert_int_equal(ws_path_exec_class("tools/hooks/pre-commit", false), WS_EXEC_NONE);
	assert_int_equal(ws_path_exec_class("pre-commit", false), WS_EXEC_NONE);
}

static void test_gitattributes(void **state)
{
	const char *plain = "*.png binary\n*.c text eol=lf\n# filter=x in a comment\n*.md -diff\n";
	assert_false(ws_gitattributes_is_exec(plain, strlen(plain)));
	const char *f = "*.c text\n*.bin filter=lfs diff=lfs merge=lfs -text\n";
	assert_true(ws_gitattributes_is_exec(f, strlen(f)));
	const char *d = "*.x   diff=evil";
	assert_true(ws_gitattributes_is_exec(d, strlen(d)));
	const char *m = "[attr]evil merge=x\n*.y evil\n";
	assert_true(ws_gitattributes_is_exec(m, strlen(m)));
	const char *q = "\"a b filter=x\" text\n";
	assert_false(ws_gitattributes_is_exec(q, strlen(q))); /* the quoted pattern is not an attribute */
	const char *crlf = "*.c text\r\n*.z\tFILTER=x\r\n";
	assert_true(ws_gitattributes_is_exec(crlf, strlen(crlf)));
}

static void esc_is(const char *in, size_t len, unsigned flags, const char *want)
{
	_cleanup_free_ char *out = ws_escape(in, len, flags);
	assert_string_equal(out, want);
}

#define ESC(lit, flags, want) esc_is(lit, sizeof(lit) - 1, flags, want)

static void test_escape(void **state)
{
	ESC("plain text", WS_ESC_NAME, "plain text");
	ESC("\x1b]0;pwned\x07", WS_ESC_NAME, "\\x1b]0;pwned\\x07");
	ESC("a\x1b[2Jb", WS_ESC_CONTENT, "a\\x1b[2Jb");
	ESC("tab\there\nnl\r", WS_ESC_CONTENT, "tab\there\nnl\\x0d");
	ESC("tab\tnl\n", WS_ESC_NAME, "tab\\x09nl\\x0a");
	ESC("back\\slash", WS_ESC_NAME, "back\\\\slash");
	ESC("back\\slash", WS_ESC_CONTENT, "back\\slash");
	ESC("del\x7f", WS_ESC_NAME, "del\\x7f");
	ESC("nul\0x", WS_ESC_CONTENT, "nul\\x00x");
	/* Trojan Source: RLO, LRI, PDI, ALM, RLM */
	ESC("a\xe2\x80\xae" "b", WS_ESC_CONTENT, "a\\u{202E}b");
	ESC("\xe2\x81\xa6x\xe2\x81\xa9", WS_ESC_CONTENT, "\\u{2066}x\\u{2069}");
	ESC("\xd8\x9c", WS_ESC_NAME, "\\u{061C}");
	ESC("\xe2\x80\x8f", WS_ESC_NAME, "\\u{200F}");
	/* C1 control CSI (U+009B) encoded in UTF-8, and as a raw byte (invalid UTF-8) */
	ESC("\xc2\x9b" "31m", WS_ESC_CONTENT, "\\u{009B}31m");
	ESC("\x9b" "31m", WS_ESC_CONTENT, "\\x9b31m");
	/* invalid UTF-8: overlong '/', surrogate, truncated, beyond U+10FFFF */
	ESC("\xc0\xaf", WS_ESC_NAME, "\\xc0\\xaf");
	ESC("\xed\xa0\x80", WS_ESC_NAME, "\\xed\\xa0\\x80");
	ESC("ok\xe2\x82", WS_ESC_NAME, "ok\\xe2\\x82");
	ESC("\xf4\x90\x80\x80", WS_ESC_NAME, "\\xf4\\x90\\x80\\x80");
	/* hidden text: tag characters (U+E0041 'A'), soft hyphen, Hangul filler, variation
	 * selectors in names; VS16 of an emoji in contents passes */
	ESC("x\xf3\xa0\x81\x81y", WS_ESC_CONTENT, "x\\u{E0041}y");
	ESC("a\xc2\xad" "b", WS_ESC_NAME, "a\\u{00AD}b");
	ESC("\xe3\x85\xa4", WS_ESC_CONTENT, "\\u{3164}");
	ESC("\xe2\x9d\xa4\xef\xb8\x8f", WS_ESC_NAME, "\xe2\x9d\xa4\\u{FE0F}");
	ESC("\xe2\x9d\xa4\xef\xb8\x8f", WS_ESC_CONTENT, "\xe2\x9d\xa4\xef\xb8\x8f");
	/* valid non-ASCII passes */
	ESC("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", WS_ESC_NAME, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
	assert_true(ws_utf8_valid("caf\xc3\xa9", 5));
	assert_false(ws_utf8_valid("\xff", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_good),
		cmocka_unit_test(test_path_bad_classes),
		cmocka_unit_test(test_path_limits),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_symlink_targets),
		cmocka_unit_test(test_exec_classes),
		cmocka_unit_test(test_exec_folding),
		cmocka_unit_test(test_exec_hook_dirs),
		cmocka_unit_test(test_gitattributes),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
