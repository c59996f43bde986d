/* fuzz-layer.c — libFuzzer target over the layer applier, onto a fresh tree under a private
 * temp directory, as an unprivileged applier with small limits. An input starting with 't' is
 * applied as a raw tar stream (plain, gzip or zstd); any other input is a script of entries,
 * one a line, "K NAME|ARG" (K: f file with ARG as data, d dir, l symlink to ARG, h hard link
 * to ARG, p fifo, c char device), turned into a well-formed tar first — tar checksums make
 * raw mutations mostly fail early, the script reaches the applier's logic. Invariant: whatever
 * the layer holds, the directory beside the tree (a canary) and the temp directory itself are
 * unchanged afterwards, across two layers applied in a row. */
#include <archive.h>
#include <archive_entry.h>
#include <assert.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "image/layer.h"
#include "util/fdio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64], root[96], outside[96];

static void cleanup(void)
{
	rm_rf(base);
}

static void init(void)
{
	strcpy(base, "/tmp/fuzz-layer.XXXXXX");
	assert(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	assert(mkdir(outside, 0755) == 0);
	char canary[128];
	snprintf(canary, sizeof(canary), "%s/canary", outside);
	assert(write_file_atomic_at(AT_FDCWD, canary, "canary", 6, 0644) == 0);
	atexit(cleanup);
}

static void script_entry(struct archive *a, char *line)
{
	char *arg = strchr(line + 1, '|');
	if (arg)
		*arg++ = '\0';
	static const struct { char k; mode_t type; } kinds[] = {
		{ 'f', AE_IFREG }, { 'd', AE_IFDIR }, { 'l', AE_IFLNK }, { 'h', AE_IFREG },
		{ 'p', AE_IFIFO }, { 'c', AE_IFCHR },
	};
	mode_t type = AE_IFREG;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if (kinds[i].k == line[0])
			type = kinds[i].type;
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, line + 1);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, line[0] == 'd' ? 0755 : 04755);
	size_t len = line[0] == 'f' && arg ? strlen(arg) : 0;
	archive_entry_set_size(e, (la_int64_t)len);
	if (line[0] == 'l')
		archive_entry_set_symlink(e, arg ? arg : "");
	if (line[0] == 'h')
		archive_entry_set_hardlink(e, arg ? arg : "");
	if (archive_write_header(a, e) == ARCHIVE_OK && len)
		archive_write_data(a, arg, len);
	archive_entry_free(e);
}

/* The script as a tar in out (cap bytes); its length. */
static size_t script_tar(const uint8_t *data, size_t size, char *out, size_t cap)
{
	_cleanup_free_ char *text = xstrndup((const char *)data, size);
	struct archive *a = archive_write_new();
	size_t used = 0;
	archive_write_set_format_pax_restricted(a);
	assert(archive_write_open_memory(a, out, cap, &used) == ARCHIVE_OK);
	for (char *p = text, *line; (line = strsep(&p, "\n"));)
		if (line[0] && line[1])
			script_entry(a, line);
	archive_write_close(a);
	archive_write_free(a);
	return used;
}

static void apply(int fd, const void *buf, size_t len)
{
	struct layer_options o;
	layer_options_default(&o);
	o.privileged = false;
	o.max_bytes = 4 * 1024 * 1024;
	o.max_entries = 2000;
	o.max_depth = 32;
	struct layer_stats st;
	(void)layer_apply_buffer(fd, buf, len, &o, &st, NULL);
}

static size_t count_entries(const char *dir)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	assert(d);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	return n;
}

static void check_unchanged(void)
{
	assert(count_entries(base) == 2);
	assert(count_entries(outside) == 1);
	char canary[128], *c = NULL;
	snprintf(canary, sizeof(canary), "%s/canary", outside);
	struct stat st;
	assert(lstat(canary, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 6);
	assert(read_file_at(AT_FDCWD, canary, 16, &c, NULL) == 0 && streq(c, "canary"));
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0])
		init();
	if (size > 1024 * 1024)
		return 0;
	assert(mkdir(root, 0755) == 0);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert(fd >= 0);
	if (size > 0 && data[0] == 't') {
		apply(fd, data + 1, size - 1);
	} else {
		/* two layers from one script (split at a blank line): whiteouts, opaque
		 * directories and replacements then meet a lower layer */
		static char tar[2 * 1024 * 1024];
		const uint8_t *split = memmem(data, size, "\n\n", 2);
		size_t first = split ? (size_t)(split - data) : size;
		apply(fd, tar, script_tar(data, first, tar, sizeof(tar)));
		if (split)
			apply(fd, tar, script_tar(split + 2, size - first - 2, tar, sizeof(tar)));
	}
	close(fd);
	check_unchanged();
	assert(rm_rf(root) == 0);
	return 0;
}
