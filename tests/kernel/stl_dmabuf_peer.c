// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_dmabuf_peer: a dma-buf MR used by a peer on another host.
 *
 *   stl_dmabuf_peer -s -d stellar0 [-g GID_INDEX] [-p PORT] [-m MIB]
 *   stl_dmabuf_peer -d stellar0 [-g GID_INDEX] [-p PORT] SERVER_IP
 *
 * The server makes a dma-buf of the test exporter (tests/kernel/dmabuf,
 * loaded; 2 MiB chunks), fills it through its mmap with a pattern,
 * registers it with ibv_reg_dmabuf_mr (remote read and write, at a 2 MiB
 * aligned iova) and tells the client its QP, GID, rkey and iova over TCP.
 * The client, over RC:
 *   read_server_bytes      RDMA READs the whole MR: the server's pattern
 *   write_lands_in_dmabuf  RDMA WRITEs another; the server finds it in the
 *                          dma-buf through its mmap
 *   move_keeps_bytes       the server has the exporter move the buffer
 *                          (new chunks, contents copied, move_notify) and
 *                          waits for Stellar to map it again (dmabuf_remaps);
 *                          the client reads its pattern back, same key
 *   write_after_move_lands a third pattern written lands in the new chunks
 * Each side prints PASS/FAIL NAME; the last line is "N passed, N failed".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "stl_tlib.h"
#include "dmabuf/stl_dmabuf_exp.h"

#define M2 (2UL << 20)
#define IOVA 0x40000000ULL
#define PIECE (1U << 20)	/* bytes per RDMA operation */
#define WAIT_SECONDS 60

/* What each side tells the other, in host byte order (same machine type). */
struct peer_info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t iova;
	uint64_t len;
	union ibv_gid gid;
};

/* Client -> server requests; the server answers with one byte. */
enum { REQ_VERIFY = 'V', REQ_MOVE = 'M', REQ_QUIT = 'Q' };

static const char *dev = "stellar0";
static int gid_index = 1, port = 18950, passed, failed;
static size_t len = 16UL << 20;
static char why[256];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

static void report(const char *name, int ret)
{
	if (ret) {
		printf("FAIL %s: %s\n", name, why);
		failed++;
	} else {
		printf("PASS %s\n", name);
		passed++;
	}
	fflush(stdout);
}

/* Pattern @seed at byte offset @off: different for every 8 bytes. */
static uint64_t pat(uint32_t seed, size_t off)
{
	uint64_t x = ((uint64_t)seed << 40) ^ (off / 8) ^ 0x9e3779b97f4a7c15ULL;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return x;
}

static void fill(void *p, size_t n, uint32_t seed)
{
	uint64_t *q = p;

	for (size_t i = 0; i < n / 8; i++)
		q[i] = pat(seed, i * 8);
}

/* -1 and a reason if @p is not pattern @seed over @n bytes. */
static int check(const void *p, size_t n, uint32_t seed, const char *what)
{
	const volatile uint64_t *q = p;

	for (size_t i = 0; i < n / 8; i++)
		if (q[i] != pat(seed, i * 8))
			return fail("%s: byte %zu differs (0x%016llx, want 0x%016llx)",
				    what, i * 8, (unsigned long long)q[i],
				    (unsigned long long)pat(seed, i * 8));
	return 0;
}

static int xfer(int fd, void *buf, size_t n, int out)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = out ? write(fd, p, n) : read(fd, p, n);

		if (r <= 0)
			return fail("TCP %s: %s", out ? "write" : "read",
				    r ? strerror(errno) : "peer closed");
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* ---- server ---- */

static int wait_remapped(long long before)
{
	for (int i = 0; i < WAIT_SECONDS * 10; i++) {
		if (tlib_hw_counter(dev, "dmabuf_remaps") > before)
			return 0;
		usleep(100000);
	}
	return fail("dmabuf_remaps stayed at %lld for %d s", before, WAIT_SECONDS);
}

static int serve(void)
{
	struct stl_exp_create cr = { .size = len, .chunk = M2 };
	struct tlib_side s = { 0 };
	struct peer_info me, peer;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct tlib_rc_peer rp;
	struct ibv_mr *mr;
	const char *step;
	int exp, lfd, cfd, one = 1, ret;
	uint8_t req, ans;
	uint32_t seed;
	void *map;

	if (tlib_side_open(&s, dev, gid_index, why, sizeof(why)))
		return -1;
	exp = open(STL_EXP_DEV, O_RDWR | O_CLOEXEC);
	if (exp < 0)
		return fail("%s: %s (is stl_dmabuf_exp loaded?)", STL_EXP_DEV,
			    strerror(errno));
	if (ioctl(exp, STL_EXP_IOC_CREATE, &cr))
		return fail("STL_EXP_IOC_CREATE %zu bytes: %s", len, strerror(errno));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cr.fd, 0);
	if (map == MAP_FAILED)
		return fail("mmap of the dma-buf: %s", strerror(errno));
	fill(map, len, 1);
	mr = ibv_reg_dmabuf_mr(s.pd, 0, len, IOVA, cr.fd,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return fail("ibv_reg_dmabuf_mr: %s", strerror(errno));

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((uint16_t)port);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
		return fail("TCP port %d: %s", port, strerror(errno));
	printf("# listening on %d: dma-buf %zu MiB, rkey 0x%x\n", port,
	       len >> 20, mr->rkey);
	fflush(stdout);
	cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		return fail("accept: %s", strerror(errno));
	me = (struct peer_info){ .qpn = s.qp->qp_num, .rkey = mr->rkey,
				 .iova = IOVA, .len = len, .gid = s.gid };
	if (xfer(cfd, &me, sizeof(me), 1) || xfer(cfd, &peer, sizeof(peer), 0))
		return -1;
	rp = (struct tlib_rc_peer){ .qpn = peer.qpn, .gid = peer.gid,
				    .sgid_index = gid_index, .mtu = IBV_MTU_1024,
				    .access = IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ };
	ret = tlib_rc_connect(s.qp, &rp, &step);
	if (ret)
		return fail("%s: %s", step, strerror(ret));
	ans = 'c';
	if (xfer(cfd, &ans, 1, 1))
		return -1;

	for (;;) {
		if (xfer(cfd, &req, 1, 0))
			return -1;
		if (req == REQ_QUIT)
			break;
		ans = 'y';
		if (req == REQ_VERIFY) {
			if (xfer(cfd, &seed, sizeof(seed), 0))
				return -1;
			ret = check(map, len, seed, "the dma-buf as its mmap shows it");
			report(seed == 2 ? "write_lands_in_dmabuf" : "write_after_move_lands",
			       ret);
		} else if (req == REQ_MOVE) {
			struct stl_exp_move mv = { .fd = cr.fd, .mode = STL_EXP_MOVE };
			struct stl_exp_info in0 = { .fd = cr.fd }, in1 = { .fd = cr.fd };
			long long r0 = tlib_hw_counter(dev, "dmabuf_remaps");

			ret = ioctl(exp, STL_EXP_IOC_INFO, &in0);
			if (!ret && ioctl(exp, STL_EXP_IOC_MOVE, &mv))
				ret = fail("STL_EXP_IOC_MOVE: %s", strerror(errno));
			if (!ret)
				ret = wait_remapped(r0);
			if (!ret && ioctl(exp, STL_EXP_IOC_INFO, &in1))
				ret = fail("STL_EXP_IOC_INFO: %s", strerror(errno));
			if (!ret && in1.first_pfn == in0.first_pfn)
				ret = fail("the buffer did not move (first pfn 0x%llx)",
					   (unsigned long long)in0.first_pfn);
			report("move_remaps_the_mr", ret);
		} else {
			ret = fail("unknown request %d", req);
		}
		if (ret)
			ans = 'n';
		if (xfer(cfd, &ans, 1, 1))
			return -1;
	}
	ibv_dereg_mr(mr);
	munmap(map, len);
	close(cr.fd);
	return 0;
}

/* ---- client ---- */

/* @n bytes at MR offset @off, in pieces, one signalled WR each. */
static int rdma(struct tlib_side *s, struct ibv_mr *lmr, const struct peer_info *p,
		enum ibv_wr_opcode op, const char *what)
{
	for (size_t off = 0; off < p->len; off += PIECE) {
		struct ibv_sge sge = { (uintptr_t)lmr->addr + off, PIECE, lmr->lkey };
		struct ibv_send_wr wr = { .wr_id = off, .sg_list = &sge, .num_sge = 1,
					  .opcode = op, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		struct ibv_wc wc;
		time_t end = time(NULL) + WAIT_SECONDS;
		int n;

		wr.wr.rdma.remote_addr = p->iova + off;
		wr.wr.rdma.rkey = p->rkey;
		if (ibv_post_send(s->qp, &wr, &bad))
			return fail("%s at %zu: ibv_post_send: %s", what, off,
				    strerror(errno));
		while (!(n = ibv_poll_cq(s->cq, 1, &wc)) && time(NULL) < end)
			;
		if (n != 1)
			return fail("%s at %zu: no completion in %d s", what, off,
				    WAIT_SECONDS);
		if (wc.status != IBV_WC_SUCCESS)
			return fail("%s at %zu: %s", what, off,
				    ibv_wc_status_str(wc.status));
	}
	return 0;
}

static int ask(int fd, uint8_t req, uint32_t seed)
{
	uint8_t ans;

	if (xfer(fd, &req, 1, 1) ||
	    (req == REQ_VERIFY && xfer(fd, &seed, sizeof(seed), 1)) ||
	    xfer(fd, &ans, 1, 0))
		return -1;
	return ans == 'y' ? 0 : fail("the server answered '%c' (see its log)", ans);
}

/* Read the whole MR into @lmr's buffer: it must hold pattern @seed. */
static int read_check(struct tlib_side *s, struct ibv_mr *lmr,
		      const struct peer_info *p, uint32_t seed)
{
	memset(lmr->addr, 0, p->len);
	if (rdma(s, lmr, p, IBV_WR_RDMA_READ, "read"))
		return -1;
	return check(lmr->addr, p->len, seed, "what the client read");
}

/* Write pattern @seed over the whole MR; the server must find it there. */
static int write_check(struct tlib_side *s, struct ibv_mr *lmr,
		       const struct peer_info *p, int fd, uint32_t seed)
{
	fill(lmr->addr, p->len, seed);
	if (rdma(s, lmr, p, IBV_WR_RDMA_WRITE, "write"))
		return -1;
	return ask(fd, REQ_VERIFY, seed);
}

static int client(const char *server)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct tlib_side s = { 0 };
	struct peer_info me, peer;
	struct tlib_rc_peer rp;
	struct ibv_mr *lmr;
	const char *step;
	time_t end = time(NULL) + WAIT_SECONDS;
	uint8_t ans;
	void *buf;
	int fd, ret;

	if (tlib_side_open(&s, dev, gid_index, why, sizeof(why)))
		return -1;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, server, &sa.sin_addr) != 1)
		return fail("bad address %s", server);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(fd);
		if (time(NULL) >= end)
			return fail("cannot connect to %s:%d", server, port);
		usleep(200000);
	}
	if (xfer(fd, &peer, sizeof(peer), 0))
		return -1;
	buf = mmap(NULL, peer.len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	lmr = ibv_reg_mr(s.pd, buf, peer.len, IBV_ACCESS_LOCAL_WRITE);
	if (!lmr)
		return fail("ibv_reg_mr: %s", strerror(errno));
	me = (struct peer_info){ .qpn = s.qp->qp_num, .gid = s.gid };
	if (xfer(fd, &me, sizeof(me), 1))
		return -1;
	rp = (struct tlib_rc_peer){ .qpn = peer.qpn, .gid = peer.gid,
				    .sgid_index = gid_index, .mtu = IBV_MTU_1024 };
	ret = tlib_rc_connect(s.qp, &rp, &step);
	if (ret)
		return fail("%s: %s", step, strerror(ret));
	if (xfer(fd, &ans, 1, 0))
		return -1;
	printf("# server rkey 0x%x, iova 0x%llx, %llu MiB\n", peer.rkey,
	       (unsigned long long)peer.iova, (unsigned long long)peer.len >> 20);

	report("read_server_bytes", read_check(&s, lmr, &peer, 1));
	report("write_lands_in_dmabuf", write_check(&s, lmr, &peer, fd, 2));
	ret = ask(fd, REQ_MOVE, 0);
	if (!ret)
		ret = read_check(&s, lmr, &peer, 2);
	report("move_keeps_bytes", ret);
	report("write_after_move_lands", write_check(&s, lmr, &peer, fd, 3));

	ans = REQ_QUIT;
	xfer(fd, &ans, 1, 1);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int c, server = 0, ret;

	while ((c = getopt(argc, argv, "sd:g:p:m:")) != -1) {
		switch (c) {
		case 's':
			server = 1;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			len = strtoul(optarg, NULL, 0) << 20;
			break;
		default:
			goto usage;
		}
	}
	if (server == (optind < argc) || !len || len % M2)
		goto usage;
	ret = server ? serve() : client(argv[optind]);
	if (ret)
		report(server ? "server" : "client", ret);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: stl_dmabuf_peer -s -d DEV [-g GIDX] [-p PORT] [-m MIB]\n"
		"       stl_dmabuf_peer -d DEV [-g GIDX] [-p PORT] SERVER_IP\n");
	return 2;
}
