// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stl_link_bench - create N RDMA devices and delete them again from one
 * process over RDMA netlink (what `rdma link add/delete` send), timing each
 * request (send to acknowledgement: the kernel's work plus one system call
 * each way):
 *
 *   stl_link_bench -t stellar -n N -d NETDEV        N devices over NETDEV
 *   stl_link_bench -t rxe -n N -d PREFIX            rxe over PREFIX0..N-1
 *   LINK_BENCH type=T op=create n=N median_us=M p99_us=P max_us=X
 *   LINK_BENCH type=T op=delete n=N median_us=M p99_us=P max_us=X
 *   LINK_BENCH type=T op=memory n=N kib_per_device=K
 *
 * The memory line: kernel memory (/proc/meminfo Slab + VmallocUsed + Percpu)
 * with the N devices idle, less before, per device.
 *
 * rxe takes one device per netdev, so its baseline runs over N netdevs
 * made beforehand (dummies, untimed).  Exit status 0, 1 on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>

static struct mnl_socket *sock;
static unsigned int portid, seq;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct nlmsghdr *msg(char *buf, int cmd, int flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++seq;
	return nlh;
}

static int talk(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int ret;

	if (mnl_socket_sendto(sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		ret = mnl_socket_recvfrom(sock, buf, sizeof(buf));
		if (ret < 0)
			return -errno;
		ret = mnl_cb_run(buf, ret, nlh->nlmsg_seq, portid, cb, data);
	} while (ret > 0);
	return ret < 0 ? -errno : 0;
}

struct names {
	int n;
	char (*name)[32];
	uint32_t *index;
};

static int attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (type == RDMA_NLDEV_ATTR_DEV_INDEX || type == RDMA_NLDEV_ATTR_DEV_NAME)
		tb[type] = attr;
	return MNL_CB_OK;
}

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct names *nm = data;
	int i;

	mnl_attr_parse(nlh, 0, attr_cb, tb);
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return MNL_CB_OK;
	for (i = 0; i < nm->n; i++)
		if (!strcmp(nm->name[i], mnl_attr_get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME])))
			nm->index[i] = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	return MNL_CB_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Slab + VmallocUsed + Percpu of /proc/meminfo, in KiB; -1 if unread. */
static long kernel_kib(void)
{
	char line[256], key[64];
	long v, sum = 0;
	int found = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %ld", key, &v) != 2)
			continue;
		if (!strcmp(key, "Slab") || !strcmp(key, "VmallocUsed") ||
		    !strcmp(key, "Percpu")) {
			sum += v;
			found++;
		}
	}
	fclose(f);
	return found == 3 ? sum : -1;
}

static void report(const char *type, const char *op, double *t, int n)
{
	qsort(t, n, sizeof(*t), cmp_double);
	printf("LINK_BENCH type=%s op=%s n=%d median_us=%.0f p99_us=%.0f max_us=%.0f\n",
	       type, op, n, t[n / 2], t[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
	       t[n - 1]);
}

int main(int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], ndev[64];
	const char *type = "stellar", *netdev = NULL;
	struct nlmsghdr *nlh;
	struct names nm = {};
	double *t, t0;
	int n = 0, want, opt, i, ret = 0;
	long kib0, kib1;

	while ((opt = getopt(argc, argv, "t:n:d:")) != -1) {
		switch (opt) {
		case 't':
			type = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'd':
			netdev = optarg;
			break;
		default:
			return 1;
		}
	}
	if (n <= 0 || !netdev || (strcmp(type, "stellar") && strcmp(type, "rxe"))) {
		fprintf(stderr, "usage: stl_link_bench -t stellar|rxe -n N -d NETDEV|PREFIX\n");
		return 1;
	}
	sock = mnl_socket_open(NETLINK_RDMA);
	if (!sock || mnl_socket_bind(sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("RDMA netlink");
		return 1;
	}
	portid = mnl_socket_get_portid(sock);
	want = n;
	t = calloc(n, sizeof(*t));
	nm.n = n;
	nm.name = calloc(n, sizeof(*nm.name));
	nm.index = calloc(n, sizeof(*nm.index));
	if (!t || !nm.name || !nm.index)
		return 1;

	kib0 = kernel_kib();
	for (i = 0; i < n; i++) {
		snprintf(nm.name[i], sizeof(nm.name[i]), "lb%s%d", type, i);
		if (!strcmp(type, "rxe"))
			snprintf(ndev, sizeof(ndev), "%s%d", netdev, i);
		else
			snprintf(ndev, sizeof(ndev), "%s", netdev);
		nlh = msg(buf, RDMA_NLDEV_CMD_NEWLINK, 0);
		mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, nm.name[i]);
		mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_LINK_TYPE, type);
		mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_NDEV_NAME, ndev);
		t0 = now_us();
		ret = talk(nlh, NULL, NULL);
		t[i] = now_us() - t0;
		if (ret) {
			fprintf(stderr, "create %s over %s: %s\n", nm.name[i], ndev,
				strerror(-ret));
			n = i;
			break;
		}
	}
	if (n)
		report(type, "create", t, n);
	kib1 = kernel_kib();
	if (n && kib0 >= 0 && kib1 >= 0)
		printf("LINK_BENCH type=%s op=memory n=%d kib_per_device=%.1f\n",
		       type, n, (double)(kib1 - kib0) / n);
	nm.n = n;
	nlh = msg(buf, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);
	if (talk(nlh, dump_cb, &nm)) {
		perror("device dump");
		return 1;
	}
	for (i = 0; i < n; i++) {
		nlh = msg(buf, RDMA_NLDEV_CMD_DELLINK, 0);
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, nm.index[i]);
		t0 = now_us();
		ret = talk(nlh, NULL, NULL);
		t[i] = now_us() - t0;
		if (ret) {
			fprintf(stderr, "delete %s: %s\n", nm.name[i], strerror(-ret));
			return 1;
		}
	}
	if (n)
		report(type, "delete", t, n);
	return n != want;
}
