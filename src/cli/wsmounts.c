/* wsmounts.c — the list of a vm box's copied read-write mounts (WSNAP_MOUNTS, beside the
 * box): written once when `run` copies a profile's mounts in, read by diff/apply --mount. */
#include <fcntl.h>
#include <sys/stat.h>

#include "cli/wsnap.h"
#include "util/fdio.h"

char *wsnap_mount_manifest(int index)
{
	return xasprintf("mount-%d.manifest", index);
}

int wsnap_mount_find(int box_fd, const char *name, const char *mount, int *ret_index, char **ret_host, pd_err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_file_at(box_fd, WSNAP_MOUNTS, WSNAP_MOUNTS_MAX, &text, &len);
	if (r < 0 && r != -ENOENT)
		return pd_error(err, r, "cannot read the mounts of '%s'", name);
	/* records are NUL-terminated pairs; a torn last record is ignored */
	int index = 0;
	for (size_t off = 0; r == 0 && off < len; index++) {
		const char *box = text + off;
		size_t bl = strnlen(box, len - off);
		if (off + bl + 1 >= len)
			break;
		const char *host = box + bl + 1;
		size_t hl = strnlen(host, len - off - bl - 1);
		if (off + bl + 1 + hl >= len)
			break;
		if (streq(box, mount)) {
			*ret_index = index;
			*ret_host = xstrdup(host);
			return 0;
		}
		off += bl + 1 + hl + 1;
	}
	return pd_error_msg(err, ENOENT,
			    "sandbox '%s' has no copied read-write mount at %s (only a vm box's profile mounts that are "
			    "directories are copies; on ns they are the host's own directories)",
			    name, mount);
}

int wsnap_mount_record(const char *box_dir, const char *box, const char *host, pd_err *err)
{
	_cleanup_close_ int dfd = open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = dfd < 0 ? -errno : read_file_at(dfd, WSNAP_MOUNTS, WSNAP_MOUNTS_MAX, &text, &len);
	if (r == -ENOENT)
		r = 0, len = 0;
	if (r < 0)
		return pd_error(err, r, "cannot read %s/%s", box_dir, WSNAP_MOUNTS);
	int index = 0;
	for (size_t i = 0; i < len; i++)
		index += text[i] == '\0';
	index /= 2;
	size_t bl = strlen(box) + 1, hl = strlen(host) + 1;
	if (len + bl + hl > WSNAP_MOUNTS_MAX)
		return pd_error_msg(err, E2BIG, "too many mounts");
	text = xrealloc(text, len + bl + hl);
	memcpy(text + len, box, bl);
	memcpy(text + len + bl, host, hl);
	_cleanup_free_ char *tmp = xasprintf("%s/%s.tmp", box_dir, WSNAP_MOUNTS);
	_cleanup_free_ char *dst = xasprintf("%s/%s", box_dir, WSNAP_MOUNTS);
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	r = fd < 0 ? -errno : fd_write_all(fd, text, len + bl + hl);
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return pd_error(err, r, "cannot record the mount %s", box);
	}
	return index;
}

