// SPDX-License-Identifier: GPL-2.0-only
/*
 * stl_spray_mad - send one message of Stellar's path exchange (the vendor
 * MAD of spray/spray_path.c) through ib_umad, as any host on the network
 * can: the tests send malformed and spoofed ones to a QP whose paths are
 * up and check that the module drops them and keeps its paths.
 *
 *   stl_spray_mad -u /dev/infiniband/umadN -g GID_INDEX -D IPV4 \
 *                 -s SRC_QPN -t DST_QPN [-o OP] [-v VERSION] [-n PATHS]
 *                 [-q QPN,QPN,...] [-O OUI] [-G IPV4] [-P PATH] [-E EPOCH]
 *
 * -D is the destination (its IPv4-mapped GID), -G the source GID the
 * message claims (default: -D's), -q the sender's path QPs 1.. (path 0
 * is -s unless -q starts with "0:" followed by the value to put there),
 * -P and -E the path and epoch of a repair (ops 4 and 5).
 * Exit 0 once the MAD was on the wire: it is sent as a request that
 * expects an answer within 20 ms, which nobody gives (the module answers
 * with a Send of its own), so ib_umad reports the send back as timed out
 * once it completed.  A second at most is waited for that.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/ib_user_mad.h>

#define MAD_SIZE	256
#define VENDOR_DATA	40	/* MAD header 24, RMPP 12, reserved 1, OUI 3 */
#define SPRAY_CLASS	0x4e
#define SPRAY_ATTR	0x5350
#define MAX_PATHS	16

static void die(const char *what)
{
	fprintf(stderr, "stl_spray_mad: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: stl_spray_mad -u UMAD -g GIDX -D IPV4 -s SRC_QPN -t DST_QPN [-o OP] [-v VER] [-n N] [-q QPNS] [-O OUI] [-G IPV4] [-P PATH] [-E EPOCH]\n");
	exit(2);
}

static void mapped_gid(const char *ip, uint8_t *gid)
{
	struct in_addr a;

	if (inet_pton(AF_INET, ip, &a) != 1)
		usage();
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

int main(int argc, char **argv)
{
	struct ib_user_mad_reg_req req = { .qpn = 1 };
	struct pollfd pfd;
	uint32_t src = 0, dst = 0, oui = 0x0a5711, qpn[MAX_PATHS] = { 0 };
	int op = 1, version = 1, n = -1, gidx = -1, opt, fd, nq = 1, i;
	int path = 0, epoch = 0;
	const char *umad = NULL, *dip = NULL, *sip = NULL;
	unsigned char buf[sizeof(struct ib_user_mad_hdr) + MAD_SIZE];
	struct ib_user_mad_hdr *h = (void *)buf;
	uint8_t *mad = buf + sizeof(*h), *d = mad + VENDOR_DATA;
	bool zero_set = false;
	char *s, *tok;

	while ((opt = getopt(argc, argv, "u:g:D:G:s:t:o:v:n:q:O:P:E:")) != -1) {
		switch (opt) {
		case 'u':
			umad = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'D':
			dip = optarg;
			break;
		case 'G':
			sip = optarg;
			break;
		case 's':
			src = strtoul(optarg, NULL, 0);
			break;
		case 't':
			dst = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			op = atoi(optarg);
			break;
		case 'v':
			version = atoi(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'O':
			oui = strtoul(optarg, NULL, 0);
			break;
		case 'P':
			path = atoi(optarg);
			break;
		case 'E':
			epoch = atoi(optarg);
			break;
		case 'q':
			s = optarg;
			if (!strncmp(s, "0:", 2)) {
				qpn[0] = strtoul(s + 2, &s, 0);
				zero_set = true;
				if (*s == ',')
					s++;
			}
			for (tok = strtok(s, ","); tok && nq < MAX_PATHS;
			     tok = strtok(NULL, ","))
				qpn[nq++] = strtoul(tok, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!umad || gidx < 0 || !dip || !src || !dst)
		usage();
	if (!zero_set)
		qpn[0] = src;
	if (n < 0)
		n = nq;

	memset(buf, 0, sizeof(buf));
	fd = open(umad, O_RDWR);
	if (fd < 0)
		die(umad);
	if (ioctl(fd, IB_USER_MAD_ENABLE_PKEY))
		die("IB_USER_MAD_ENABLE_PKEY");
	/* No class: an agent that only sends. */
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req))
		die("IB_USER_MAD_REGISTER_AGENT");

	h->id = req.id;
	h->qpn = htobe32(1);
	h->qkey = htobe32(0x80010000);
	h->grh_present = 1;
	h->gid_index = gidx;
	h->hop_limit = 64;
	mapped_gid(dip, h->gid);

	mad[0] = 1;			/* base version */
	mad[1] = SPRAY_CLASS;
	mad[2] = 1;			/* class version */
	mad[3] = 0x03;			/* method Send */
	put32(mad + 12, 0x5354);	/* transaction ID, low half */
	mad[16] = SPRAY_ATTR >> 8;
	mad[17] = SPRAY_ATTR & 0xff;
	mad[37] = oui >> 16;
	mad[38] = oui >> 8;
	mad[39] = oui;

	d[0] = version;
	d[1] = op;
	d[2] = n;
	d[3] = path;
	put32(d + 4, src);
	put32(d + 8, dst);
	for (i = 0; i < MAX_PATHS; i++)
		put32(d + 12 + 4 * i, qpn[i]);
	mapped_gid(sip ? sip : dip, d + 12 + 4 * MAX_PATHS);
	d[12 + 4 * MAX_PATHS + 16] = epoch;

	h->timeout_ms = 20;
	h->retries = 0;
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		die("write");
	/*
	 * Closing cancels a send not yet on the wire: wait for ib_umad to
	 * hand the send back (ETIMEDOUT, or an answer).  Without it in a
	 * second, the send had that second, as it always had.
	 */
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 1000) == 1 && read(fd, buf, sizeof(buf)) < 0)
		die("read");
	close(fd);
	printf("sent op %d version %d n %d src %u dst %u to %s\n", op, version,
	       n, src, dst, dip);
	return 0;
}
