/* fuzz-image-import.c — libFuzzer target over `image import` of an archive: the entry table
 * (paths, symlinks and hard links between entries), manifest.json / index.json resolution,
 * the synthesised manifest, the diff_id binding and the unpack, into a private store. An input
 * starting with 't' is the archive itself; any other input is a script of entries, one a line,
 * "K NAME|DATA" (K: f file, d dir, l symlink, h hard link; "\n" in DATA written as "\\n"),
 * made into a well-formed tar first so mutations reach the import logic. Invariant: nothing
 * appears outside the store's directory, and a failed import leaves no record. */
#include <archive.h>
#include <archive_entry.h>
#include <assert.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "image/import.h"
#include "util/fdio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64], home[96], input[96];

static void cleanup(void)
{
	rm_rf(base);
}

static void init(void)
{
	strcpy(base, "/tmp/fuzz-import.XXXXXX");
	assert(mkdtemp(base));
	snprintf(home, sizeof(home), "%s/home", base);
	snprintf(input, sizeof(input), "%s/in.tar", base);
	atexit(cleanup);
}

static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] == 'n')
			*o++ = '\n', s++;
		else
			*o++ = *s;
	}
	*o = '\0';
}

static void script_entry(struct archive *a, char *line)
{
	if (strlen(line) < 3 || line[1] != ' ')
		return;
	char none[1] = "";
	char *name = line + 2, *arg = strchr(name, '|');
	if (arg)
		*arg++ = '\0';
	else
		arg = none;
	unescape(arg);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_perm(e, 0644);
	size_t len = 0;
	switch (line[0]) {
	case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
	case 'l': archive_entry_set_filetype(e, AE_IFLNK); archive_entry_set_symlink(e, arg); break;
	case 'h': archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_hardlink(e, arg); break;
	default: archive_entry_set_filetype(e, AE_IFREG); len = strlen(arg); archive_entry_set_size(e, (la_int64_t)len);
	}
	archive_write_header(a, e);
	if (len)
		archive_write_data(a, arg, len);
	archive_entry_free(e);
}

static void write_script(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = xstrndup((const char *)data, size);
	int fd = open(input, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert(fd >= 0);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_open_fd(a, fd);
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		script_entry(a, line);
	archive_write_close(a);
	archive_write_free(a);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0])
		init();
	if (size > 1 << 20)
		return 0;
	if (size && data[0] == 't')
		assert(write_file_atomic_at(AT_FDCWD, input, data + 1, size - 1, 0644) == 0);
	else
		write_script(data, size);
	struct img_store *s;
	pd_err err = {0};
	assert(img_store_open(home, IMG_LOCK_SHARED, &s, &err) == 0);
	struct img_import_opts o = {.name = "fuzz/x:1"};
	struct img_record *r = NULL;
	int q = img_import(s, input, &o, &r, &err);
	img_record_free(r);
	struct img_record **v;
	size_t n;
	assert(img_record_list(s, &v, &n, &err) == 0);
	assert(q == 0 ? n == 1 : n == 0);
	img_record_list_free(v, n);
	img_store_close(s);
	/* only images/ (and the input) in the base directory */
	_cleanup_closedir_ DIR *d = opendir(base);
	for (struct dirent *de; (de = readdir(d));)
		assert(de->d_name[0] == '.' || streq(de->d_name, "home") || streq(de->d_name, "in.tar"));
	rm_rf(home);
	return 0;
}
