/* cmd_logs.c — `paddock logs [-f] [--net [--json]] NAME`: the supervisor's log of the
 * sandbox (start, stop, sessions, refusals), or its egress audit log (net.log: one JSON line
 * per DNS answer and connection; shown as a table unless --json). */
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "egress/audit.h"
#include "runtime/vm/vm_console.h"
#include "util/fdio.h"

#include <cjson/cJSON.h>

/* One audit line as "TIME VERDICT KIND NAME:PORT RULE [REASON] up/down". Hostile names are
 * printed through %s of cJSON-decoded strings with control bytes replaced. */
static void print_audit_line(const char *line)
{
	cJSON *o = cJSON_Parse(line);
	if (!o)
		return;
	const char *k[] = {"time", "verdict", "kind", "name", "rule", "reason"};
	char v[6][300];
	for (size_t i = 0; i < 6; i++) {
		const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k[i]);
		snprintf(v[i], sizeof(v[i]), "%s", cJSON_IsString(j) ? j->valuestring : "");
		for (char *c = v[i]; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	const cJSON *port = cJSON_GetObjectItemCaseSensitive(o, "port");
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(o, "bytes_up");
	const cJSON *down = cJSON_GetObjectItemCaseSensitive(o, "bytes_down");
	printf("%s %-5s %-7s %s:%d rule=%s%s%s up=%.0f down=%.0f\n", v[0], v[1], v[2], v[3],
	       cJSON_IsNumber(port) ? port->valueint : 0, v[4], v[5][0] ? " reason=" : "", v[5],
	       cJSON_IsNumber(up) ? up->valuedouble : 0, cJSON_IsNumber(down) ? down->valuedouble : 0);
	cJSON_Delete(o);
}

/* Prints complete lines of fd (keeping a partial last line for the next round). */
static int copy_audit(int fd, char *pend, size_t *plen, size_t cap)
{
	ssize_t n;
	while ((n = read(fd, pend + *plen, cap - 1 - *plen)) > 0) {
		*plen += (size_t)n;
		pend[*plen] = '\0';
		char *s = pend, *nl;
		while ((nl = strchr(s, '\n'))) {
			*nl = '\0';
			print_audit_line(s);
			s = nl + 1;
		}
		*plen = strlen(s);
		memmove(pend, s, *plen);
		if (*plen == cap - 1)
			*plen = 0; /* a line longer than any we write: drop it */
	}
	fflush(stdout);
	return n < 0 ? -errno : 0;
}

static int copy_out(int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fd_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
			return -errno;
	return n < 0 ? -errno : 0;
}

/* The supervisor's log holds text from inside the box (its tar's and its programs' error
 * lines at start-up): each line reaches the terminal escaped (pd_fwrite_escaped), never raw.
 * A line longer than the buffer is written in pieces; the last one waits for its newline. */
static int copy_escaped(int fd, char *pend, size_t *plen, size_t cap)
{
	ssize_t n;
	while ((n = read(fd, pend + *plen, cap - 1 - *plen)) > 0) {
		*plen += (size_t)n;
		pend[*plen] = '\0';
		char *s = pend, *nl;
		while ((nl = memchr(s, '\n', *plen - (size_t)(s - pend)))) {
			pd_fwrite_escaped(s, (size_t)(nl - s), stdout);
			putchar('\n');
			s = nl + 1;
		}
		*plen -= (size_t)(s - pend);
		memmove(pend, s, *plen);
		if (*plen == cap - 1) {
			pend[*plen] = '\0';
			pd_fwrite_escaped(pend, *plen, stdout);
			*plen = 0;
		}
	}
	fflush(stdout);
	return n < 0 ? -errno : 0;
}

enum log_kind { LOG_SUPERVISOR, LOG_NET_TABLE, LOG_NET_JSON };

static int copy_log(enum log_kind k, int fd, char *pend, size_t *plen)
{
	return k == LOG_NET_TABLE ? copy_audit(fd, pend, plen, 65536)
	       : k == LOG_SUPERVISOR ? copy_escaped(fd, pend, plen, 65536)
				     : copy_out(fd);
}

int cmd_logs(int argc, char **argv)
{
	static const struct option opts[] = {
		{"follow", no_argument, NULL, 'f'}, {"net", no_argument, NULL, 'N'},
		{"json", no_argument, NULL, 'J'}, {"console", no_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'}, {0}};
	bool follow = false, net = false, json = false, console = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("Usage: paddock logs [-f] [--net [--json] | --console] NAME\n\nShow the sandbox's supervisor log; -f follows it "
			       "while the sandbox runs.\n--net shows the egress audit log instead (every DNS answer and\n"
			       "connection, allowed or denied); --json prints its raw JSON lines.\n"
			       "--console shows a vm sandbox's serial console (the last 1 MiB at most, sanitised).\n");
			return 0;
		}
		if (c == 'N')
			net = true;
		else if (c == 'J')
			json = true;
		else if (c == 'f')
			follow = true;
		else if (c == 'C')
			console = true;
		else
			return cli_usage("logs", "unknown option '%s'", argv[optind - 1]);
	}
	if (json && !net)
		return cli_usage("logs", "--json goes with --net");
	if (console && (net || follow))
		return cli_usage("logs", "--console goes with neither --net nor -f");
	if (optind != argc - 1)
		return cli_usage("logs", "logs takes exactly one NAME");
	if (cli_check_name("logs", argv[optind]))
		return EXIT_USAGE;
	pd_err err = {0};
	_cleanup_free_ char *dir = NULL;
	if (cli_box_dir(argv[optind], NULL, &dir, &err) < 0)
		return cli_fail(&err);
	if (console) {
		struct box_spec spec = {0};
		bool vm = store_load_spec(dir, &spec, NULL) == 0 && spec.backend && streq(spec.backend, "vm");
		box_spec_free(&spec);
		if (!vm)
			return cli_usage("logs", "--console: '%s' is not a vm sandbox (only a vm box has a serial console)",
					 argv[optind]);
		_cleanup_free_ char *text = vm_console_read(dir);
		fputs(text, stdout);
		if (text[0])
			putchar('\n');
		return 0;
	}
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, net ? "net.log" : "supervisor.log");
	enum log_kind kind = !net ? LOG_SUPERVISOR : json ? LOG_NET_JSON : LOG_NET_TABLE;
	_cleanup_free_ char *pend = xmalloc(65536);
	size_t plen = 0;
	/* the audit log's rotated files first, oldest first: it is one log */
	for (int i = EGRESS_AUDIT_KEEP; net && i >= 1; i--) {
		_cleanup_free_ char *old = xasprintf("%s.%d", path, i);
		_cleanup_close_ int ofd = open(old, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (ofd >= 0)
			copy_log(kind, ofd, pend, &plen);
		plen = 0;
	}
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : cli_fail((pd_error(&err, errno, "cannot open %s", path), &err));
	copy_log(kind, fd, pend, &plen);
	while (follow && store_status(dir, NULL) == BOX_STATUS_RUNNING) {
		usleep(200000);
		copy_log(kind, fd, pend, &plen);
		/* rotated away (net.log is net.log.1 now): the rest of the old file, then the new */
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && (a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
			int nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (nfd >= 0) {
				copy_log(kind, fd, pend, &plen);
				close(fd);
				fd = nfd;
			}
		}
	}
	if (kind == LOG_SUPERVISOR && plen > 0) { /* a last line without its newline */
		pend[plen] = '\0';
		pd_fwrite_escaped(pend, plen, stdout);
		putchar('\n');
	}
	return 0;
}
