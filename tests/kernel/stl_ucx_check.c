// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_ucx_check - byte-checked UCX (UCP) traffic between two processes.
 *
 *   server: stl_ucx_check -p PORT [-s SIZES] [-n ITERS] [-X]
 *   client: stl_ucx_check -p PORT [-s SIZES] [-n ITERS] [-X] SERVER_IP
 *
 * ucx_perftest (UCX 1.13) does not look at the bytes it moves; this program
 * does.  The two sides meet over a plain TCP connection (the server listens
 * on PORT) and exchange their UCP worker addresses, the address of the
 * server's registered RMA buffer and its packed rkey.  Each side then opens
 * a UCP endpoint to the other's worker address (transports, devices and
 * everything else come from the UCX_* environment) and, for every size of
 * SIZES (comma separated bytes, K/M suffixes allowed; default
 * 1,64,4096,65536,1048576) and ITERS iterations (default 5):
 *
 *   1. tag:      the client sends a seeded pattern, the server receives it
 *                and checks the length and every byte;
 *   2. tag back: the server sends another pattern, the client checks it;
 *   3. put:      the client ucp_put_nbx()es a pattern into the server's
 *                buffer at an offset, flushes the endpoint and says so with
 *                a tag message; the server checks the region and that the
 *                bytes around it kept their guard value;
 *   4. get:      the server fills the region with a pattern and says so; the
 *                client ucp_get_nbx()es it and checks it.
 *
 * Receive buffers are pre-filled with the complement of the expected
 * pattern (so every byte not written is caught) followed by guard bytes.
 * A side goes on to the next step only after its own check passed, so when
 * both sides end each prints the same line
 *
 *   stl_ucx_check: OK: N bytes checked (tag X, put Y, get Z)
 *
 * and exits 0.  Any error, wrong byte (first differing offset, expected
 * and received value), UCX failure (with ucs_status_string) or a wait of
 * more than 30 s prints "stl_ucx_check: FAIL: <what>" and exits 1; a side
 * whose peer went away (control connection closed) fails too.
 *
 * -X (self-test of the checking): corrupt one byte of the first tag message
 * this side sends; the peer must report the mismatch and both exit 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#define PROG		"stl_ucx_check"
#define OP_TIMEOUT_S	30	/* any one UCX operation or handshake */
#define ACCEPT_TIMEOUT_S 60	/* server: the client must come by then */
#define GUARD		0xa5	/* bytes that must never be written */
#define PAD		256	/* guard bytes around each checked region */
#define MAX_SIZES	32
#define MAX_SIZE	(64UL << 20)
#define HELLO_MAGIC	0x53544c5543583031ULL	/* "STLUCX01" */
#define CTRL_MAGIC	0x53544c43u

/* tags of the three message streams (full tag matched) */
#define TAG_DATA	0x53544c0000000001ULL
#define TAG_BACK	0x53544c0000000002ULL
#define TAG_CTRL	0x53544c0000000003ULL

/*
 * pattern kinds: each step has its own, so bytes of one step never pass
 * for another's
 */
enum { PAT_TAG = 1, PAT_BACK, PAT_PUT, PAT_GET };

enum ctrl_op { CTRL_PUT_DONE = 1, CTRL_GET_READY, CTRL_GET_DONE };

static const char *const ctrl_names[] = {
	[CTRL_PUT_DONE] = "put done",
	[CTRL_GET_READY] = "get ready",
	[CTRL_GET_DONE] = "get done",
};

struct ctrl_msg {
	uint32_t magic;
	uint32_t op;
	uint64_t size;
	uint64_t iter;
	uint64_t offset;
};

static struct {
	int server;
	int sock;
	int corrupt;			/* -X: still to be done */
	size_t sizes[MAX_SIZES];
	unsigned int nsizes;
	unsigned long iters;
	size_t max_size;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	ucp_mem_h memh;			/* server: the RMA buffer */
	ucp_rkey_h rkey;		/* client: the server's RMA buffer */
	uint64_t raddr;			/* client: its address there */
	uint64_t rlen;
	uint8_t *rma;			/* server: RMA buffer, rma_len bytes */
	size_t rma_len;
	uint8_t *buf;			/* max_size + PAD */
	uint8_t *expect;		/* max_size */
	uint64_t tag_bytes, put_bytes, get_bytes;
} g = { .sock = -1 };

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, PROG ": FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((format(printf, 1, 2))) info(const char *fmt, ...)
{
	va_list ap;

	printf(PROG ": ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ucx_check(ucs_status_t st, const char *what)
{
	if (st != UCS_OK)
		fail("%s: %s", what, ucs_status_string(st));
}

/* ---- patterns ---------------------------------------------------------- */

/*
 * splitmix64: a seeded byte stream that differs for every kind, size and
 * iteration
 */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void pattern(uint8_t *p, size_t len, int kind, size_t size,
		    unsigned long iter)
{
	uint64_t s = ((uint64_t)kind << 56) ^ ((uint64_t)size << 16) ^ iter;
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			v = mix(&s);
		p[i] = (uint8_t)(v >> ((i & 7) * 8));
	}
}

/*
 * dst[0..len) = the complement of the pattern (every byte differs from the
 * one expected there), then PAD guard bytes
 */
static void prefill(uint8_t *dst, const uint8_t *expect, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		dst[i] = (uint8_t)~expect[i];
	memset(dst + len, GUARD, PAD);
}

static void check_bytes(const char *what, size_t size, unsigned long iter,
			const uint8_t *got, const uint8_t *expect, size_t len)
{
	size_t i;

	if (!memcmp(got, expect, len))
		return;
	for (i = 0; i < len && got[i] == expect[i]; i++)
		;
	fail("%s: size %zu iteration %lu: byte %zu differs: expected 0x%02x, got 0x%02x",
	     what, size, iter, i, expect[i], got[i]);
}

static void check_guard(const char *what, size_t size, unsigned long iter,
			const uint8_t *p, size_t len, size_t base)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != GUARD)
			fail("%s: size %zu iteration %lu: guard byte at offset %zu overwritten: expected 0x%02x, got 0x%02x",
			     what, size, iter, base + i, GUARD, p[i]);
}

/* -X: flip one byte of the first tag message this side sends */
static void maybe_corrupt(uint8_t *p, size_t len)
{
	if (!g.corrupt)
		return;
	g.corrupt = 0;
	p[len / 2] ^= 0x5a;
	info("-X: corrupted byte %zu of the first tag message sent", len / 2);
}

/* ---- out-of-band TCP connection ---------------------------------------- */

/* The peer closed the control connection (it failed or is gone)? */
static int peer_gone(void)
{
	struct pollfd pfd = { .fd = g.sock, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	if (pfd.revents & (POLLERR | POLLHUP))
		return 1;
	return recv(g.sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void oob_send(const void *p, size_t len, const char *what)
{
	const char *c = p;
	ssize_t n;

	while (len) {
		n = send(g.sock, c, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("sending %s to the peer over TCP: %s", what,
			     n < 0 ? strerror(errno) : "connection closed");
		c += n;
		len -= n;
	}
}

static void oob_recv(void *p, size_t len, const char *what)
{
	char *c = p;
	ssize_t n;

	while (len) {
		n = recv(g.sock, c, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			fail("timeout: no %s from the peer over TCP within %d s",
			     what, OP_TIMEOUT_S);
		if (n <= 0)
			fail("receiving %s from the peer over TCP: %s", what,
			     n < 0 ? strerror(errno) : "connection closed");
		c += n;
		len -= n;
	}
}

static void oob_send_blob(const void *p, size_t len, const char *what)
{
	uint64_t n = htobe64(len);

	oob_send(&n, sizeof(n), what);
	oob_send(p, len, what);
}

/* a malloc()ed copy of the peer's blob; *len its size */
static void *oob_recv_blob(size_t *len, const char *what)
{
	uint64_t n;
	void *p;

	oob_recv(&n, sizeof(n), what);
	n = be64toh(n);
	if (!n || n > (1 << 20))
		fail("the peer's %s has an unlikely size %" PRIu64, what, n);
	p = malloc(n);
	if (!p)
		fail("out of memory");
	oob_recv(p, n, what);
	*len = n;
	return p;
}

static void sock_setup(int fd)
{
	struct timeval tv = { .tv_sec = OP_TIMEOUT_S };
	int one = 1;

	g.sock = fd;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		fail("setsockopt: %s", strerror(errno));
}

static void oob_listen(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct pollfd pfd;
	int one = 1, lfd, fd, n;
	char *end;
	unsigned long p = strtoul(port, &end, 10);

	if (*end || !p || p > 65535)
		fail("bad port %s", port);
	sa.sin_port = htons(p);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		fail("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
		fail("listening on TCP port %lu: %s", p, strerror(errno));
	info("server: waiting for the client on TCP port %lu", p);
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	do
		n = poll(&pfd, 1, ACCEPT_TIMEOUT_S * 1000);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		fail("timeout: no client connected within %d s", ACCEPT_TIMEOUT_S);
	fd = accept(lfd, NULL, NULL);
	if (n < 0 || fd < 0)
		fail("accept: %s", strerror(errno));
	close(lfd);
	sock_setup(fd);
}

static void oob_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	double end = now_s() + OP_TIMEOUT_S;
	int fd, rc, err = 0;

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		fail("%s port %s: %s", host, port, gai_strerror(rc));
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				freeaddrinfo(res);
				sock_setup(fd);
				return;
			}
			err = errno;
			close(fd);
		}
		/* the server may not listen yet */
		if (err != ECONNREFUSED || now_s() > end)
			fail("connecting to %s port %s: %s", host, port, strerror(err));
		usleep(200 * 1000);
	}
}

/*
 * Both sides: wait until the peer got here too, progressing the worker
 * meanwhile (the peer may still need our side of the transport).
 */
static void oob_barrier(const char *what)
{
	struct pollfd pfd = { .fd = g.sock, .events = POLLIN };
	double end = now_s() + OP_TIMEOUT_S;
	char c = 'b';
	ssize_t n;

	oob_send(&c, 1, what);
	for (;;) {
		ucp_worker_progress(g.worker);
		if (poll(&pfd, 1, 1) > 0)
			break;
		if (now_s() > end)
			fail("timeout: the peer did not reach %s within %d s",
			     what, OP_TIMEOUT_S);
	}
	n = recv(g.sock, &c, 1, 0);
	if (n != 1)
		fail("%s: the peer closed the control connection", what);
}

/* ---- UCX --------------------------------------------------------------- */

/*
 * Wait for request @req of operation @what (NULL: it completed at once),
 * progressing the worker; fails on an error, a timeout or a vanished peer.
 * @info (tag receives only): the received message's details.
 */
static void wait_req(ucs_status_ptr_t req, const char *what,
		     ucp_tag_recv_info_t *info)
{
	double end = now_s() + OP_TIMEOUT_S;
	unsigned long n = 0;
	ucs_status_t st;

	if (!req) {
		if (info)
			fail("%s: completed without a request", what);
		return;
	}
	if (UCS_PTR_IS_ERR(req))
		fail("%s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
	while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
		ucp_worker_progress(g.worker);
		if (++n % 256)
			continue;
		if (now_s() > end)
			fail("timeout: %s did not complete within %d s", what,
			     OP_TIMEOUT_S);
		if (peer_gone())
			fail("%s: the peer closed the control connection (it failed or exited)",
			     what);
	}
	if (st == UCS_OK && info)
		st = ucp_tag_recv_request_test(req, info);
	ucp_request_free(req);
	if (st != UCS_OK)
		fail("%s: %s", what, ucs_status_string(st));
}

static void tag_send(const void *p, size_t len, ucp_tag_t tag, const char *what)
{
	ucp_request_param_t prm = { .op_attr_mask = 0 };

	wait_req(ucp_tag_send_nbx(g.ep, p, len, tag, &prm), what, NULL);
}

/*
 * Receive tag @tag into p (room for cap bytes); returns the length.  No
 * immediate completion: UCX 1.13.1 leaves recv_info.tag_info unwritten
 * when a message that was already there completes the receive at once, so
 * the length always comes from ucp_tag_recv_request_test().
 */
static size_t tag_recv(void *p, size_t cap, ucp_tag_t tag, const char *what)
{
	ucp_tag_recv_info_t ti = { 0 };
	ucp_request_param_t prm = {
		.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
	};

	wait_req(ucp_tag_recv_nbx(g.worker, p, cap, tag, ~(ucp_tag_t)0, &prm),
		 what, &ti);
	if (ti.sender_tag != tag)
		fail("%s: message with tag 0x%" PRIx64 ", expected 0x%" PRIx64,
		     what, (uint64_t)ti.sender_tag, (uint64_t)tag);
	return ti.length;
}

static void ctrl_send(enum ctrl_op op, size_t size, unsigned long iter,
		      size_t offset)
{
	struct ctrl_msg m = { .magic = CTRL_MAGIC, .op = op, .size = size,
			      .iter = iter, .offset = offset };
	char what[64];

	snprintf(what, sizeof(what), "tag send of '%s'", ctrl_names[op]);
	tag_send(&m, sizeof(m), TAG_CTRL, what);
}

static void ctrl_recv(enum ctrl_op op, size_t size, unsigned long iter,
		      size_t offset)
{
	struct ctrl_msg m;
	char what[64];
	size_t len;

	snprintf(what, sizeof(what), "tag receive of '%s'", ctrl_names[op]);
	memset(&m, 0, sizeof(m));
	len = tag_recv(&m, sizeof(m), TAG_CTRL, what);
	if (len != sizeof(m) || m.magic != CTRL_MAGIC || m.op != op ||
	    m.size != size || m.iter != iter || m.offset != offset)
		fail("%s: got length %zu op %u size %" PRIu64 " iteration %" PRIu64
		     " offset %" PRIu64 ", expected op %u size %zu iteration %lu offset %zu",
		     what, len, m.op, m.size, m.iter, m.offset, op, size, iter, offset);
}

static void ucx_init(void)
{
	ucp_params_t prm = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA,
	};
	ucp_worker_params_t wprm = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_config_t *cfg;

	ucx_check(ucp_config_read(NULL, NULL, &cfg), "ucp_config_read");
	ucx_check(ucp_init(&prm, cfg, &g.ctx), "ucp_init");
	ucp_config_release(cfg);
	ucx_check(ucp_worker_create(g.ctx, &wprm, &g.worker), "ucp_worker_create");
}

/* server: register the RMA buffer */
static void rma_map(void)
{
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
	};

	/* PAD guard, up to 7 bytes of offset, the region, PAD guard */
	g.rma_len = PAD + 8 + g.max_size + PAD;
	g.rma = aligned_alloc(4096, (g.rma_len + 4095) & ~4095UL);
	if (!g.rma)
		fail("out of memory");
	memset(g.rma, GUARD, g.rma_len);
	mp.address = g.rma;
	mp.length = g.rma_len;
	ucx_check(ucp_mem_map(g.ctx, &mp, &g.memh), "ucp_mem_map");
}

/*
 * Exchange settings, worker addresses and (server to client) the RMA
 * buffer and its rkey; connect the endpoint.
 */
static void exchange(void)
{
	uint64_t hello[3 + MAX_SIZES], peer[3 + MAX_SIZES];
	ucp_ep_params_t ep_prm = {
		.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
	};
	ucp_address_t *addr;
	size_t addr_len, peer_len, rkey_len;
	void *peer_addr, *rkey_buf;
	uint64_t ra[2];
	unsigned int i;

	memset(hello, 0, sizeof(hello));
	hello[0] = htobe64(HELLO_MAGIC);
	hello[1] = htobe64(g.iters);
	hello[2] = htobe64(g.nsizes);
	for (i = 0; i < g.nsizes; i++)
		hello[3 + i] = htobe64(g.sizes[i]);
	oob_send(hello, sizeof(hello), "settings");
	oob_recv(peer, sizeof(peer), "settings");
	if (peer[0] != hello[0])
		fail("the peer is not " PROG " (or another version)");
	if (memcmp(peer, hello, sizeof(hello)))
		fail("the peer runs with other -s/-n settings (%" PRIu64
		     " sizes, %" PRIu64 " iterations)", be64toh(peer[2]), be64toh(peer[1]));

	ucx_check(ucp_worker_get_address(g.worker, &addr, &addr_len),
		  "ucp_worker_get_address");
	oob_send_blob(addr, addr_len, "worker address");
	peer_addr = oob_recv_blob(&peer_len, "worker address");
	ucp_worker_release_address(g.worker, addr);
	ep_prm.address = peer_addr;
	ucx_check(ucp_ep_create(g.worker, &ep_prm, &g.ep), "ucp_ep_create");
	free(peer_addr);
	info("%s: endpoint to the peer's worker created (its address: %zu bytes)",
	     g.server ? "server" : "client", peer_len);

	if (g.server) {
		ucx_check(ucp_rkey_pack(g.ctx, g.memh, &rkey_buf, &rkey_len),
			  "ucp_rkey_pack");
		ra[0] = htobe64((uintptr_t)g.rma);
		ra[1] = htobe64(g.rma_len);
		oob_send(ra, sizeof(ra), "RMA buffer address");
		oob_send_blob(rkey_buf, rkey_len, "rkey");
		ucp_rkey_buffer_release(rkey_buf);
	} else {
		oob_recv(ra, sizeof(ra), "RMA buffer address");
		g.raddr = be64toh(ra[0]);
		g.rlen = be64toh(ra[1]);
		if (g.rlen < PAD + 8 + g.max_size + PAD)
			fail("the server's RMA buffer is too small (%" PRIu64 " bytes)",
			     g.rlen);
		rkey_buf = oob_recv_blob(&rkey_len, "rkey");
		ucx_check(ucp_ep_rkey_unpack(g.ep, rkey_buf, &g.rkey),
			  "ucp_ep_rkey_unpack");
		free(rkey_buf);
		info("client: server RMA buffer 0x%" PRIx64 ", %" PRIu64
		     " bytes, rkey %zu bytes", g.raddr, g.rlen, rkey_len);
	}
}

/* ---- the checks -------------------------------------------------------- */

static size_t rma_offset(unsigned long iter)
{
	return PAD + (iter & 7);	/* aligned and unaligned */
}

static void server_round(size_t size, unsigned long iter)
{
	size_t off = rma_offset(iter), len;

	/* 1. tag: receive and check the client's pattern */
	pattern(g.expect, size, PAT_TAG, size, iter);
	prefill(g.buf, g.expect, size);
	len = tag_recv(g.buf, size + PAD, TAG_DATA, "tag receive");
	if (len != size)
		fail("tag receive: size %zu iteration %lu: got %zu bytes",
		     size, iter, len);
	check_bytes("tag receive", size, iter, g.buf, g.expect, size);
	check_guard("tag receive", size, iter, g.buf + size, PAD, size);
	g.tag_bytes += size;

	/*
	 * the put target: guard around, complement of the pattern inside;
	 * set before the tag back (the client puts only after it)
	 */
	pattern(g.expect, size, PAT_PUT, size, iter);
	memset(g.rma, GUARD, g.rma_len);
	prefill(g.rma + off, g.expect, size);

	/* 2. tag back */
	pattern(g.buf, size, PAT_BACK, size, iter);
	maybe_corrupt(g.buf, size);
	tag_send(g.buf, size, TAG_BACK, "tag send back");

	/* 3. put: wait for "put done" (the client checked the tag back) */
	ctrl_recv(CTRL_PUT_DONE, size, iter, off);
	g.tag_bytes += size;	/* the client checked the tag back before */
	check_bytes("put", size, iter, g.rma + off, g.expect, size);
	check_guard("put (before the region)", size, iter, g.rma, off, 0);
	check_guard("put (after the region)", size, iter, g.rma + off + size,
		    g.rma_len - off - size, off + size);
	g.put_bytes += size;

	/* 4. get: fill the region, tell the client, wait until it checked */
	pattern(g.rma + off, size, PAT_GET, size, iter);
	ctrl_send(CTRL_GET_READY, size, iter, off);
	ctrl_recv(CTRL_GET_DONE, size, iter, off);
	g.get_bytes += size;
}

static void client_round(size_t size, unsigned long iter)
{
	ucp_request_param_t prm = { .op_attr_mask = 0 };
	size_t off = rma_offset(iter), len;

	/* 1. tag */
	pattern(g.buf, size, PAT_TAG, size, iter);
	maybe_corrupt(g.buf, size);
	tag_send(g.buf, size, TAG_DATA, "tag send");

	/* 2. tag back (arrives only after the server checked ours) */
	pattern(g.expect, size, PAT_BACK, size, iter);
	prefill(g.buf, g.expect, size);
	len = tag_recv(g.buf, size + PAD, TAG_BACK, "tag receive back");
	g.tag_bytes += size;	/* the server checked ours before replying */
	if (len != size)
		fail("tag receive back: size %zu iteration %lu: got %zu bytes",
		     size, iter, len);
	check_bytes("tag receive back", size, iter, g.buf, g.expect, size);
	check_guard("tag receive back", size, iter, g.buf + size, PAD, size);
	g.tag_bytes += size;

	/* 3. put, flush, then say so */
	pattern(g.buf, size, PAT_PUT, size, iter);
	wait_req(ucp_put_nbx(g.ep, g.buf, size, g.raddr + off, g.rkey, &prm),
		 "put", NULL);
	wait_req(ucp_ep_flush_nbx(g.ep, &prm), "endpoint flush after put", NULL);
	ctrl_send(CTRL_PUT_DONE, size, iter, off);

	/* 4. get ("get ready" comes after the server checked the put) */
	ctrl_recv(CTRL_GET_READY, size, iter, off);
	g.put_bytes += size;	/* the server checked the put before */
	pattern(g.expect, size, PAT_GET, size, iter);
	prefill(g.buf, g.expect, size);
	wait_req(ucp_get_nbx(g.ep, g.buf, size, g.raddr + off, g.rkey, &prm),
		 "get", NULL);
	check_bytes("get", size, iter, g.buf, g.expect, size);
	check_guard("get", size, iter, g.buf + size, PAD, size);
	g.get_bytes += size;
	ctrl_send(CTRL_GET_DONE, size, iter, off);
}

static void finish(void)
{
	ucp_request_param_t prm = { .op_attr_mask = 0 };

	/*
	 * everything sent is acknowledged on both sides before any endpoint
	 * goes away
	 */
	wait_req(ucp_worker_flush_nbx(g.worker, &prm), "worker flush", NULL);
	oob_barrier("the end of the traffic");
	if (g.rkey)
		ucp_rkey_destroy(g.rkey);
	wait_req(ucp_ep_close_nbx(g.ep, &prm), "endpoint close", NULL);
	oob_barrier("the endpoint close");
	if (g.memh)
		ucx_check(ucp_mem_unmap(g.ctx, g.memh), "ucp_mem_unmap");
	ucp_worker_destroy(g.worker);
	ucp_cleanup(g.ctx);
	close(g.sock);
}

/* ---- main -------------------------------------------------------------- */

static void parse_sizes(const char *arg)
{
	char *s = strdup(arg), *tok, *save = NULL, *end;
	unsigned long v;

	if (!s)
		fail("out of memory");
	g.nsizes = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		v = strtoul(tok, &end, 0);
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (errno || *end || !v || v > MAX_SIZE)
			fail("bad size '%s' (1 to %lu bytes, K/M suffixes)", tok, MAX_SIZE);
		if (g.nsizes == MAX_SIZES)
			fail("more than %d sizes", MAX_SIZES);
		g.sizes[g.nsizes++] = v;
	}
	free(s);
	if (!g.nsizes)
		fail("no size in '%s'", arg);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " -p PORT [-s SIZES] [-n ITERS] [-X]            (server)\n"
		"       " PROG " -p PORT [-s SIZES] [-n ITERS] [-X] SERVER_IP  (client)\n"
		"  -s SIZES  comma-separated message sizes in bytes, K/M suffixes\n"
		"            (default 1,64,4096,65536,1048576)\n"
		"  -n ITERS  iterations per size (default 5)\n"
		"  -X        self-test: corrupt one byte of the first tag message sent\n"
		"            (the peer must fail)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *port = NULL, *host = NULL;
	unsigned long it;
	unsigned int i;
	double t0;
	char *end;
	int c;

	parse_sizes("1,64,4096,65536,1048576");
	g.iters = 5;
	while ((c = getopt(argc, argv, "p:s:n:Xh")) != -1) {
		switch (c) {
		case 'p':
			port = optarg;
			break;
		case 's':
			parse_sizes(optarg);
			break;
		case 'n':
			g.iters = strtoul(optarg, &end, 0);
			if (*end || !g.iters || g.iters > 1000000)
				fail("bad iteration count '%s'", optarg);
			break;
		case 'X':
			g.corrupt = 1;
			break;
		default:
			usage();
		}
	}
	if (!port || argc - optind > 1)
		usage();
	if (optind < argc)
		host = argv[optind];
	g.server = !host;
	for (i = 0; i < g.nsizes; i++)
		if (g.sizes[i] > g.max_size)
			g.max_size = g.sizes[i];
	g.buf = aligned_alloc(4096, (g.max_size + PAD + 4095) & ~4095UL);
	g.expect = aligned_alloc(4096, (g.max_size + 4095) & ~4095UL);
	if (!g.buf || !g.expect)
		fail("out of memory");

	/* listen first: the client may come while UCX starts up */
	if (g.server)
		oob_listen(port);
	else
		oob_connect(host, port);
	ucx_init();
	if (g.server)
		rma_map();
	exchange();

	t0 = now_s();
	for (i = 0; i < g.nsizes; i++) {
		for (it = 0; it < g.iters; it++) {
			if (g.server)
				server_round(g.sizes[i], it);
			else
				client_round(g.sizes[i], it);
		}
		info("size %zu: %lu iterations of tag, tag back, put, get checked",
		     g.sizes[i], g.iters);
	}
	info("all sizes checked in %.1f s", now_s() - t0);
	finish();
	info("OK: %" PRIu64 " bytes checked (tag %" PRIu64 ", put %" PRIu64
	     ", get %" PRIu64 ")",
	     g.tag_bytes + g.put_bytes + g.get_bytes, g.tag_bytes, g.put_bytes,
	     g.get_bytes);
	return 0;
}
