// SPDX-License-Identifier: GPL-2.0-only
/*
 * stellarctl - create, list, limit and watch Stellar devices.
 *
 * Devices are created and deleted over RDMA netlink (what `rdma link add`
 * and `rdma link delete` send), or through /sys/kernel/stellar/link_add when
 * the parent is named by its RDMA device; limits and counters are the
 * device's sysfs files.  See stellarctl(8).
 *
 * Exit status: 0 done; 1 the kernel refused (the message gives the errno);
 * 2 usage error; 3 no such Stellar device.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>

#define EXIT_REFUSED	1
#define EXIT_USAGE	2
#define EXIT_NODEV	3

#define SYS_IB		"/sys/class/infiniband"
#define LINK_ADD	"/sys/kernel/stellar/link_add"

static bool json;
static const char *prog = "stellarctl";

static void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* --- sysfs ---------------------------------------------------------------- */

/* Read the first line of SYS_IB/dev/file into buf; 0 or -errno. */
static int sys_read(const char *dev, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), SYS_IB "/%s/%s", dev, file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int sys_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	return n && n < 64 && !strpbrk(name, "/%: \t\n") && strcmp(name, ".") &&
	       strcmp(name, "..");
}

/* A Stellar device (it has the Stellar ABI attribute)? */
static bool is_stellar(const char *dev)
{
	char buf[32];

	return valid_name(dev) && !sys_read(dev, "stellar_abi_version", buf, sizeof(buf));
}

/* is_stellar(), saying so on stderr when it is not. */
static bool stellar_or_say(const char *dev)
{
	if (is_stellar(dev))
		return true;
	msg("%s: no such Stellar device", dev);
	return false;
}

/* --- JSON ----------------------------------------------------------------- */

static void fjson_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_str(const char *s)
{
	fjson_str(stdout, s);
}

static void json_kv_str(const char *k, const char *v, bool comma)
{
	json_str(k);
	putchar(':');
	json_str(v);
	if (comma)
		putchar(',');
}

/* --- netlink -------------------------------------------------------------- */

struct nl {
	struct mnl_socket *sock;
	unsigned int portid;
	unsigned int seq;
};

static int nl_open(struct nl *nl)
{
	nl->sock = mnl_socket_open(NETLINK_RDMA);
	if (!nl->sock)
		return -errno;
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(nl->sock);
		return err;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = time(NULL);
	return 0;
}

static struct nlmsghdr *nl_msg(struct nl *nl, char *buf, int cmd, int flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++nl->seq;
	return nlh;
}

/* Send nlh and run cb on every answer; 0 or -errno (the kernel's). */
static int nl_talk(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int ret;

	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ret = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (ret < 0)
			return -errno;
		ret = mnl_cb_run(buf, ret, nlh->nlmsg_seq, nl->portid, cb, data);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

struct dev_entry {
	uint32_t index;
	char name[64];
};

struct dev_list {
	struct dev_entry *v;
	size_t n, cap;
};

static int dev_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (type == RDMA_NLDEV_ATTR_DEV_INDEX || type == RDMA_NLDEV_ATTR_DEV_NAME)
		tb[type] = attr;
	return MNL_CB_OK;
}

static int dev_list_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct dev_list *l = data;
	struct dev_entry *e;

	mnl_attr_parse(nlh, 0, dev_attr_cb, tb);
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return MNL_CB_OK;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct dev_entry *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return MNL_CB_ERROR;
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n++];
	e->index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	snprintf(e->name, sizeof(e->name), "%s",
		 mnl_attr_get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME]));
	return MNL_CB_OK;
}

/* Every RDMA device of this network namespace, by netlink. */
static int nl_devices(struct nl *nl, struct dev_list *l)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nl_msg(nl, buf, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);

	return nl_talk(nl, nlh, dev_list_cb, l);
}

static int nl_create(struct nl *nl, const char *name, const char *ndev)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nl_msg(nl, buf, RDMA_NLDEV_CMD_NEWLINK, 0);

	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_LINK_TYPE, "stellar");
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_NDEV_NAME, ndev);
	return nl_talk(nl, nlh, NULL, NULL);
}

static int nl_delete(struct nl *nl, uint32_t index)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nl_msg(nl, buf, RDMA_NLDEV_CMD_DELLINK, 0);

	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	return nl_talk(nl, nlh, NULL, NULL);
}

/* Move device @index into the network namespace open as @nsfd. */
static int nl_move(struct nl *nl, uint32_t index, int nsfd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = nl_msg(nl, buf, RDMA_NLDEV_CMD_SET, 0);

	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_NET_NS_FD, nsfd);
	return nl_talk(nl, nlh, NULL, NULL);
}

/* --- limits --------------------------------------------------------------- */

/* KEY=VALUE settings and the sysfs file each one writes. */
static const struct {
	const char *key;
	const char *file;
	bool bytes;
} settings[] = {
	{ "pd", "pd_quota", false },
	{ "cq", "cq_quota", false },
	{ "qp", "qp_quota", false },
	{ "srq", "srq_quota", false },
	{ "mr", "mr_quota", false },
	{ "mw", "mw_quota", false },
	{ "ah", "ah_quota", false },
	{ "cqe", "cqe_quota", false },
	{ "wqe", "wqe_quota", false },
	{ "pin_quota", "pin_quota_bytes", true },
	{ "pin_cache", "pin_cache_bytes", true },
	{ "kmem", "kmem_quota", true },
	{ "rate", "rate_limit_bytes", true },
	{ "weight", "weight", false },
	{ "share_total", "share_total_bytes", true },
	{ "share_yield", "share_yield_percent", false },
	{ "class", "traffic_class", false },
	{ "paths", "spray_paths", false },
};

/* class=bulk|latency: the one setting whose value is a word. */
static bool is_class(const char *file, const char *val)
{
	return !strcmp(file, "traffic_class") &&
	       (!strcmp(val, "bulk") || !strcmp(val, "latency"));
}

/* "123", "64K", "2M", "1G" (bytes only take suffixes); false if not. */
static bool parse_value(const char *s, bool bytes, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	if (bytes && *end && !end[1]) {
		switch (toupper((unsigned char)*end)) {
		case 'K':
			mul = 1ULL << 10;
			break;
		case 'M':
			mul = 1ULL << 20;
			break;
		case 'G':
			mul = 1ULL << 30;
			break;
		default:
			return false;
		}
		end++;
	}
	if (*end || v > ULLONG_MAX / mul)
		return false;
	*out = v * mul;
	return true;
}

/* Check KEY=VALUE words without applying them; returns how many are bad. */
static int check_settings(int n, char **kv)
{
	unsigned long long v;
	int i, bad = 0;
	size_t k;

	for (i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');

		for (k = 0; eq && k < sizeof(settings) / sizeof(settings[0]); k++)
			if (strlen(settings[k].key) == (size_t)(eq - kv[i]) &&
			    !strncmp(kv[i], settings[k].key, eq - kv[i]))
				break;
		if (!eq || k == sizeof(settings) / sizeof(settings[0]) ||
		    (!is_class(settings[k].file, eq + 1) &&
		     (!strcmp(settings[k].file, "traffic_class") ||
		      !parse_value(eq + 1, settings[k].bytes, &v)))) {
			msg("bad setting '%s' (KEY=VALUE; see --help)", kv[i]);
			bad++;
		}
	}
	return bad;
}

static int apply_settings(const char *dev, int n, char **kv)
{
	char path[PATH_MAX], val[32];
	unsigned long long v;
	int i, ret;
	size_t k;

	for (i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');

		for (k = 0; k < sizeof(settings) / sizeof(settings[0]); k++)
			if (strlen(settings[k].key) == (size_t)(eq - kv[i]) &&
			    !strncmp(kv[i], settings[k].key, eq - kv[i]))
				break;
		snprintf(path, sizeof(path), SYS_IB "/%s/%s", dev, settings[k].file);
		if (is_class(settings[k].file, eq + 1)) {
			snprintf(val, sizeof(val), "%s", eq + 1);
		} else {
			parse_value(eq + 1, settings[k].bytes, &v);
			snprintf(val, sizeof(val), "%llu", v);
		}
		ret = sys_write(path, val);
		if (ret) {
			msg("%s: setting %s: %s", dev, kv[i], strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* --- commands ------------------------------------------------------------- */

static int find_index(struct nl *nl, const char *name, uint32_t *index)
{
	struct dev_list l = {};
	size_t i;
	int ret = nl_devices(nl, &l);

	if (ret)
		return ret;
	ret = -ENODEV;
	for (i = 0; i < l.n; i++)
		if (!strcmp(l.v[i].name, name)) {
			*index = l.v[i].index;
			ret = 0;
		}
	free(l.v);
	return ret;
}

static int wait_for(const char *name, bool present)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (is_stellar(name) == present)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static int cmd_delete(struct nl *nl, const char *name)
{
	uint32_t index;
	int ret;

	if (!stellar_or_say(name))
		return EXIT_NODEV;
	ret = find_index(nl, name, &index);
	if (!ret)
		ret = nl_delete(nl, index);
	if (ret == -ENODEV) {
		msg("%s: no such Stellar device", name);
		return EXIT_NODEV;
	}
	if (ret) {
		msg("%s: delete refused: %s", name, strerror(-ret));
		return EXIT_REFUSED;
	}
	wait_for(name, false);
	return 0;
}

static int cmd_create(struct nl *nl, const char *name, const char *ndev,
		      const char *parent, const char *addrs, int n, char **kv)
{
	int ret;

	if (!valid_name(name)) {
		msg("bad device name '%s'", name);
		return EXIT_USAGE;
	}
	if (check_settings(n, kv))
		return EXIT_USAGE;
	if (ndev && !*addrs) {
		ret = nl_create(nl, name, ndev);
	} else {
		/* An address list goes where netlink has no room for it. */
		char line[1024];
		const char *colon = parent ? strchr(parent, ':') : NULL;

		if (ndev)
			snprintf(line, sizeof(line), "%s netdev=%s%s", name,
				 ndev, addrs);
		else if (colon)
			snprintf(line, sizeof(line), "%s %.*s %s%s", name,
				 (int)(colon - parent), parent, colon + 1,
				 addrs);
		else
			snprintf(line, sizeof(line), "%s %s%s", name, parent,
				 addrs);
		ret = sys_write(LINK_ADD, line);
	}
	if (ret) {
		msg("%s: create refused: %s (the kernel log says why)", name,
		    strerror(-ret));
		return EXIT_REFUSED;
	}
	if (wait_for(name, true)) {
		msg("%s: created, but not visible in this namespace", name);
		return EXIT_REFUSED;
	}
	/* Limits before anyone is handed the device; none, no device. */
	if (apply_settings(name, n, kv)) {
		cmd_delete(nl, name);
		return EXIT_REFUSED;
	}
	return 0;
}

/*
 * Move a device into the network namespace at @path (/var/run/netns/NAME,
 * /proc/PID/ns/net: what a container runtime hands a CNI plugin).  The
 * RDMA subsystem must be in exclusive mode (rdma system set netns
 * exclusive).
 */
static int cmd_move(struct nl *nl, const char *name, const char *path)
{
	uint32_t index;
	int fd, ret;

	if (!stellar_or_say(name))
		return EXIT_NODEV;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		msg("%s: %s", path, strerror(errno));
		return EXIT_USAGE;
	}
	ret = find_index(nl, name, &index);
	if (!ret)
		ret = nl_move(nl, index, fd);
	close(fd);
	if (ret) {
		msg("%s: move to %s refused: %s%s", name, path, strerror(-ret),
		    ret == -EOPNOTSUPP ?
		    " (needs `rdma system set netns exclusive`)" : "");
		return EXIT_REFUSED;
	}
	return 0;
}

/* The uverbs character device of @name: /dev/infiniband/uverbsN. */
static int uverbs_node(const char *name, char *path, size_t len)
{
	char file[PATH_MAX], ibdev[64];
	struct dirent *de;
	int ret = -ENODEV;
	DIR *d;
	FILE *f;

	d = opendir("/sys/class/infiniband_verbs");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(file, sizeof(file), "/sys/class/infiniband_verbs/%s/ibdev",
			 de->d_name);
		f = fopen(file, "r");
		if (!f)
			continue;
		if (fgets(ibdev, sizeof(ibdev), f)) {
			ibdev[strcspn(ibdev, "\n")] = 0;
			if (!strcmp(ibdev, name)) {
				snprintf(path, len, "/dev/infiniband/%s", de->d_name);
				ret = 0;
			}
		}
		fclose(f);
	}
	closedir(d);
	return ret;
}

/*
 * A Container Device Interface spec for @name in @dir: `podman run --device
 * stellar.io/rdma=NAME` gets its verbs device node, and a createRuntime hook
 * (stellarctl oci-hook NAME) moves it into the container's network
 * namespace before the container starts.
 */
static int cmd_cdi(const char *name, const char *dir)
{
	char node[PATH_MAX], self[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
	char env[96];
	ssize_t n;
	FILE *f;
	int ret;

	if (!stellar_or_say(name))
		return EXIT_NODEV;
	ret = uverbs_node(name, node, sizeof(node));
	if (ret) {
		msg("%s: no verbs device node: %s", name, strerror(-ret));
		return EXIT_REFUSED;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		msg("/proc/self/exe: %s", strerror(errno));
		return EXIT_REFUSED;
	}
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/stellar.io-%s.json", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* /var/run/cdi need not exist yet (a tmpfs after boot). */
	if (mkdir(dir, 0755) && errno != EEXIST) {
		msg("%s: %s", dir, strerror(errno));
		return EXIT_REFUSED;
	}
	f = fopen(tmp, "w");
	if (!f) {
		msg("%s: %s", tmp, strerror(errno));
		return EXIT_REFUSED;
	}
	fprintf(f, "{\"cdiVersion\":\"0.5.0\",\"kind\":\"stellar.io/rdma\",\"devices\":[{\"name\":");
	fjson_str(f, name);
	fprintf(f, ",\"containerEdits\":{\"deviceNodes\":[{\"path\":");
	fjson_str(f, node);
	snprintf(env, sizeof(env), "STELLAR_DEVICE=%s", name);
	fprintf(f, "}],\"env\":[");
	fjson_str(f, env);
	fprintf(f, "],\"hooks\":[{\"hookName\":\"createRuntime\",\"path\":");
	fjson_str(f, self);
	fprintf(f, ",\"args\":[\"stellarctl\",\"oci-hook\",");
	fjson_str(f, name);
	fprintf(f, "]}]}}]}\n");
	if (fclose(f) || rename(tmp, path)) {
		msg("%s: %s", path, strerror(errno));
		unlink(tmp);
		return EXIT_REFUSED;
	}
	if (json) {
		printf("{");
		json_kv_str("name", name, true);
		json_kv_str("cdi_device", "stellar.io/rdma", true);
		json_kv_str("spec", path, false);
		printf("}\n");
	} else {
		printf("%s: --device stellar.io/rdma=%s\n", path, name);
	}
	return 0;
}

/*
 * An OCI createRuntime hook: the container's state (JSON) on stdin; moves
 * @name into the network namespace of the container's process.  In the
 * shared namespace mode every namespace sees every device: nothing to do.
 */
static int cmd_oci_hook(struct nl *nl, const char *name)
{
	char state[65536], nspath[64], *p;
	size_t len = fread(state, 1, sizeof(state) - 1, stdin);
	long pid;
	uint32_t index;
	int fd, ret;

	state[len] = 0;
	p = strstr(state, "\"pid\"");
	if (p)
		p = strchr(p + 5, ':');
	pid = p ? strtol(p + 1, NULL, 10) : 0;
	if (pid <= 0) {
		msg("oci-hook: no container pid in the state on stdin");
		return EXIT_USAGE;
	}
	snprintf(nspath, sizeof(nspath), "/proc/%ld/ns/net", pid);
	fd = open(nspath, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		msg("oci-hook: %s: %s", nspath, strerror(errno));
		return EXIT_REFUSED;
	}
	ret = find_index(nl, name, &index);
	if (!ret)
		ret = nl_move(nl, index, fd);
	close(fd);
	if (ret == -EOPNOTSUPP) {
		msg("oci-hook: %s stays in the initial namespace (shared mode)", name);
		return 0;
	}
	if (ret) {
		msg("oci-hook: %s to %s: %s", name, nspath, strerror(-ret));
		return ret == -ENODEV ? EXIT_NODEV : EXIT_REFUSED;
	}
	return 0;
}

static int cmd_set(const char *name, int n, char **kv)
{
	if (!stellar_or_say(name))
		return EXIT_NODEV;
	if (!n) {
		msg("set: nothing to set");
		return EXIT_USAGE;
	}
	if (check_settings(n, kv))
		return EXIT_USAGE;
	return apply_settings(name, n, kv) ? EXIT_REFUSED : 0;
}

struct dev_info {
	char parent[64], addr_ndev[64], state[32], guid[32];
};

static void dev_info(const char *name, struct dev_info *d)
{
	char *p;

	if (sys_read(name, "parent", d->parent, sizeof(d->parent)))
		strcpy(d->parent, "?");
	if (sys_read(name, "address_netdev", d->addr_ndev, sizeof(d->addr_ndev)))
		strcpy(d->addr_ndev, "?");
	if (sys_read(name, "node_guid", d->guid, sizeof(d->guid)))
		strcpy(d->guid, "?");
	if (sys_read(name, "ports/1/state", d->state, sizeof(d->state)))
		strcpy(d->state, "?");
	p = strchr(d->state, ':');	/* "4: ACTIVE" */
	if (p)
		memmove(d->state, p + 2, strlen(p + 2) + 1);
}

static const char *dev_kind(const char *name)
{
	return strncmp(name, "rxe", 3) ? "stellar" : "rxe";
}

static void json_dev_head(const char *name, const struct dev_info *d)
{
	json_kv_str("name", name, true);
	json_kv_str("kind", dev_kind(name), true);
	json_kv_str("parent", d->parent, true);
	json_kv_str("address_netdev", d->addr_ndev, true);
	json_kv_str("state", d->state, true);
	json_kv_str("node_guid", d->guid, false);
}

static int cmp_dev(const void *a, const void *b)
{
	return strcmp(((const struct dev_entry *)a)->name,
		      ((const struct dev_entry *)b)->name);
}

static int cmd_list(struct nl *nl)
{
	struct dev_list l = {};
	struct dev_info d;
	bool first = true;
	size_t i;
	int ret = nl_devices(nl, &l);

	if (ret) {
		msg("listing RDMA devices: %s", strerror(-ret));
		return EXIT_REFUSED;
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_dev);
	if (json)
		putchar('[');
	else
		printf("%-16s %-8s %-16s %-16s %s\n", "NAME", "KIND", "PARENT",
		       "ADDRESSES", "STATE");
	for (i = 0; i < l.n; i++) {
		if (!is_stellar(l.v[i].name))
			continue;
		dev_info(l.v[i].name, &d);
		if (json) {
			printf("%s{", first ? "" : ",");
			json_dev_head(l.v[i].name, &d);
			putchar('}');
		} else {
			printf("%-16s %-8s %-16s %-16s %s\n", l.v[i].name,
			       dev_kind(l.v[i].name), d.parent, d.addr_ndev,
			       d.state);
		}
		first = false;
	}
	if (json)
		printf("]\n");
	free(l.v);
	return 0;
}

/* quota_usage ("NAME USED LIMIT" lines) as JSON members or a table. */
static int show_quotas(const char *name)
{
	char path[PATH_MAX], key[32];
	unsigned long long used, limit;
	bool first = true;
	FILE *f;

	snprintf(path, sizeof(path), SYS_IB "/%s/quota_usage", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (json)
		printf("\"quotas\":{");
	else
		printf("%-14s %20s %20s\n", "QUOTA", "USED", "LIMIT");
	while (fscanf(f, "%31s %llu %llu", key, &used, &limit) == 3) {
		if (json) {
			printf("%s", first ? "" : ",");
			json_str(key);
			printf(":{\"used\":%llu,\"limit\":%llu}", used, limit);
		} else {
			printf("%-14s %20llu %20llu\n", key, used, limit);
		}
		first = false;
	}
	fclose(f);
	if (json)
		putchar('}');
	return 0;
}

/*
 * The device's bandwidth settings, and its part of the parent's share now
 * (share_bytes: 0 when no share paces it).
 */
static int show_bandwidth(const char *name)
{
	static const struct {
		const char *key, *file;
	} bw[] = {
		{ "rate", "rate_limit_bytes" },
		{ "weight", "weight" },
		{ "class", "traffic_class" },
		{ "share_total", "share_total_bytes" },
		{ "share_yield", "share_yield_percent" },
		{ "share", "share_bytes" },
		{ "paths", "spray_paths" },
	};
	char val[64];
	size_t i;
	int ret;

	if (json)
		printf("\"bandwidth\":{");
	for (i = 0; i < sizeof(bw) / sizeof(bw[0]); i++) {
		ret = sys_read(name, bw[i].file, val, sizeof(val));
		if (ret)
			return ret;
		if (json) {
			printf("%s", i ? "," : "");
			if (!strcmp(bw[i].key, "class"))
				json_kv_str(bw[i].key, val, false);
			else
				printf("\"%s\":%llu", bw[i].key,
				       strtoull(val, NULL, 10));
		} else {
			printf("%-14s %20s\n", bw[i].key, val);
		}
	}
	if (json)
		putchar('}');
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ports/1/hw_counters/ (what `rdma statistic` shows), sorted by name. */
static int show_counters(const char *name)
{
	char path[PATH_MAX], val[32], *names[128];
	struct dirent *de;
	int n = 0, i;
	DIR *d;

	snprintf(path, sizeof(path), SYS_IB "/%s/ports/1/hw_counters", name);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < 128)
		if (de->d_name[0] != '.' && strcmp(de->d_name, "lifespan"))
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	if (json)
		printf("\"counters\":{");
	for (i = 0; i < n; i++) {
		char file[PATH_MAX];

		snprintf(file, sizeof(file), "ports/1/hw_counters/%s", names[i]);
		if (sys_read(name, file, val, sizeof(val)))
			strcpy(val, "0");
		if (json) {
			printf("%s", i ? "," : "");
			json_str(names[i]);
			printf(":%llu", strtoull(val, NULL, 10));
		} else {
			printf("%-32s %s\n", names[i], val);
		}
		free(names[i]);
	}
	if (json)
		putchar('}');
	return 0;
}

static int cmd_show(const char *name, bool quotas, bool counters)
{
	struct dev_info d;
	int ret = 0;

	if (!stellar_or_say(name))
		return EXIT_NODEV;
	dev_info(name, &d);
	if (json) {
		putchar('{');
		json_dev_head(name, &d);
	} else {
		printf("%s: kind %s, parent %s, addresses of %s, %s\n", name,
		       dev_kind(name), d.parent, d.addr_ndev, d.state);
	}
	if (quotas) {
		if (json)
			putchar(',');
		ret = show_quotas(name);
		if (!ret) {
			if (json)
				putchar(',');
			ret = show_bandwidth(name);
		}
	}
	if (!ret && counters) {
		if (json)
			putchar(',');
		ret = show_counters(name);
	}
	if (json)
		printf("}\n");
	if (ret) {
		msg("%s: %s", name, strerror(-ret));
		return EXIT_REFUSED;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stellarctl [--json] COMMAND ...\n"
		"  create NAME (--netdev NETDEV | --parent RDMADEV[:PORT]) [--addr IP]...\n"
		"         [KEY=VALUE ...]\n"
		"                 create a device; a name starting with rxe makes a device\n"
		"                 for the stock librxe; NETDEV may be a VLAN, macvlan or\n"
		"                 ipvlan of the parent's netdev (the device uses only its\n"
		"                 addresses; with --addr, up to 8, only those of them); the\n"
		"                 limits are set before it is handed out\n"
		"  delete NAME    delete a device\n"
		"  move NAME NETNS-PATH\n"
		"                 move a device into a network namespace (exclusive mode)\n"
		"  cdi NAME [--dir DIR]\n"
		"                 write a CDI spec (default dir /var/run/cdi) for\n"
		"                 podman run --device stellar.io/rdma=NAME\n"
		"  oci-hook NAME  OCI createRuntime hook (container state on stdin): move\n"
		"                 NAME into the container's network namespace\n"
		"  list           the Stellar devices of this network namespace\n"
		"  set NAME KEY=VALUE ...\n"
		"                 change limits: pd cq qp srq mr mw ah (objects),\n"
		"                 cqe wqe (queue entries), pin_quota pin_cache kmem\n"
		"                 (bytes, K/M/G suffixes), rate (bytes per second\n"
		"                 posted to the parent); 0 restores a default;\n"
		"                 weight (1-1000), class (bulk or latency),\n"
		"                 share_total (bytes per second the parent's bulk\n"
		"                 devices share by weight, 0: none), share_yield\n"
		"                 (percent of it they give up while a latency-class\n"
		"                 device is active, 0-90, default 75),\n"
		"                 paths (network paths of each new RC QP, 1-16)\n"
		"  show NAME      a device, its quotas with their use, its bandwidth\n"
		"                 settings, its counters\n"
		"  stats NAME     its counters only\n"
		"options: --json (machine-readable output), -h/--help\n"
		"exit status: 0 done, 1 refused by the kernel, 2 usage, 3 no such device\n");
}

int main(int argc, char **argv)
{
	const char *cmd, *name, *ndev = NULL, *parent = NULL;
	struct nl nl;
	int i, ret;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			msg("unknown option %s (see %s --help)", argv[i], prog);
			return EXIT_USAGE;
		}
	}
	if (i == argc) {
		msg("no command (see %s --help)", prog);
		return EXIT_USAGE;
	}
	cmd = argv[i++];
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "list") && strcmp(cmd, "create") && strcmp(cmd, "delete") &&
	    strcmp(cmd, "move") && strcmp(cmd, "cdi") && strcmp(cmd, "oci-hook") &&
	    strcmp(cmd, "set") && strcmp(cmd, "show") && strcmp(cmd, "stats")) {
		msg("unknown command '%s' (see %s --help)", cmd, prog);
		return EXIT_USAGE;
	}
	ret = nl_open(&nl);
	if (ret) {
		msg("RDMA netlink: %s", strerror(-ret));
		return EXIT_REFUSED;
	}
	if (!strcmp(cmd, "list")) {
		if (i != argc)
			goto bad;
		ret = cmd_list(&nl);
		goto out;
	}
	if (i == argc)
		goto bad;
	name = argv[i++];
	if (!strcmp(cmd, "create")) {
		char addrs[768] = "";
		size_t len = 0;

		for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
			if (!strcmp(argv[i], "--netdev")) {
				ndev = argv[i + 1];
			} else if (!strcmp(argv[i], "--parent")) {
				parent = argv[i + 1];
			} else if (!strcmp(argv[i], "--addr") &&
				   strlen(argv[i + 1]) < 64 &&
				   !strpbrk(argv[i + 1], " \t\n=") &&
				   len + 70 < sizeof(addrs)) {
				len += snprintf(addrs + len, sizeof(addrs) - len,
						" addr=%s", argv[i + 1]);
			} else {
				goto bad;
			}
		}
		if (!ndev == !parent)
			goto bad;
		ret = cmd_create(&nl, name, ndev, parent, addrs, argc - i,
				 argv + i);
	} else if (!strcmp(cmd, "cdi") && (i == argc || (i + 2 == argc &&
						      !strcmp(argv[i], "--dir")))) {
		ret = cmd_cdi(name, i == argc ? "/var/run/cdi" : argv[i + 1]);
	} else if (!strcmp(cmd, "oci-hook") && i == argc) {
		ret = cmd_oci_hook(&nl, name);
	} else if (!strcmp(cmd, "move") && i + 1 == argc) {
		ret = cmd_move(&nl, name, argv[i]);
	} else if (!strcmp(cmd, "delete") && i == argc) {
		ret = cmd_delete(&nl, name);
	} else if (!strcmp(cmd, "set")) {
		ret = cmd_set(name, argc - i, argv + i);
	} else if (!strcmp(cmd, "show") && i == argc) {
		ret = cmd_show(name, true, true);
	} else if (!strcmp(cmd, "stats") && i == argc) {
		ret = cmd_show(name, false, true);
	} else {
		goto bad;
	}
out:
	mnl_socket_close(nl.sock);
	return ret;
bad:
	mnl_socket_close(nl.sock);
	msg("bad use of '%s' (see %s --help)", cmd, prog);
	return EXIT_USAGE;
}
