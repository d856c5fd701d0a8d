/*
 * A tiny UDP endpoint on the paravirtual NIC (abi.h, "NIC"), at CPL3: the
 * kernel only passes the rings' addresses and the tails to the device and
 * counts its interrupts (SYS_NET_*); every frame is built and parsed here,
 * at native speed.
 *
 * One endpoint per guest, used by one thread (no locking):
 *
 *  - net_open(port) takes from the heap (ualloc) the two rings of
 *    REPRISE_NIC_RING descriptors, REPRISE_NIC_RING RX buffers and as many
 *    TX buffers of NET_BUF_SIZE bytes each (descriptor i always uses buffer
 *    i % REPRISE_NIC_RING), hands the rings to the device (SYS_NET_SETUP)
 *    and posts every RX buffer (SYS_NET_RXTAIL).
 *  - net_recv consumes RX descriptors in ring order: a DONE descriptor is
 *    parsed (Ethernet II -> IPv4 -> UDP, everything validated: the frames are
 *    input), its payload copied out if it is for us, and the descriptor is
 *    reset at once; the device is told (RXTAIL) when NET_RX_BATCH of them
 *    are waiting to be re-posted (not before every wait: that saves a
 *    system call per datagram, and the device always keeps at least
 *    REPRISE_NIC_RING - NET_RX_BATCH + 1 buffers; the VMM holds what does
 *    not fit until the next RXTAIL). With nothing DONE it blocks in
 *    SYS_NET_WAIT(seen), seen being the NIC interrupt count its last call
 *    returned: the device only fills descriptors at an interrupt, so a
 *    frame delivered after the check makes the count move and the wait
 *    return at once (no lost wake-up).
 *  - net_send builds one frame to the host in the next TX descriptor and
 *    writes TXTAIL: the device takes it during that exit and sets DONE, so
 *    nothing is ever waited for; a descriptor not DONE afterwards is the
 *    device breaking its contract (-REPRISE_EIO).
 *
 * Frames accepted by net_recv: destination MAC REPRISE_NET_GUEST_MAC,
 * ethertype 0x0800, IPv4 with a valid header (version 4, IHL >= 5, correct
 * header checksum, total length within the frame, not a fragment), protocol
 * 17, source REPRISE_NET_HOST_IP, destination REPRISE_NET_GUEST_IP, UDP
 * length within the IP payload, destination port = the open port, UDP
 * checksum correct or 0. Anything else is dropped and counted (net_stats).
 *
 * Frames sent: Ethernet II (REPRISE_NET_GUEST_MAC -> REPRISE_NET_HOST_MAC,
 * 0x0800), IPv4 (20 bytes, DF, TTL 64, a per-datagram id, header checksum)
 * from 10.0.2.15 to 10.0.2.2, UDP from the open port with its checksum;
 * zero-padded to the 60-byte Ethernet minimum (the IP length says the
 * truth).
 */
#include <reprise/ulib.h>

#define RING        REPRISE_NIC_RING
#define ETH_HLEN    14
#define IP_HLEN     20
#define UDP_HLEN    8
#define HDRS        (ETH_HLEN + IP_HLEN + UDP_HLEN)
#define ETH_MIN     60          /* minimum Ethernet frame without the FCS */
#define NET_RX_BATCH 16         /* re-post consumed RX buffers in batches of this */

_Static_assert(NET_BUF_SIZE >= REPRISE_NIC_FRAME_MAX && NET_BUF_SIZE <= 0xFFFF, "buffer size");
_Static_assert(NET_MAX_PAYLOAD == REPRISE_NIC_FRAME_MAX - HDRS, "payload size");
_Static_assert(sizeof(struct reprise_nic_desc) == 16, "descriptor size");

typedef volatile struct reprise_nic_desc vdesc;

static struct {
	vdesc *rx, *tx;
	uint8_t *rxbuf, *txbuf;    /* RING buffers of NET_BUF_SIZE each */
	uint32_t rx_next;          /* next RX descriptor to look at */
	uint32_t rx_tail;          /* RX tail the device was last given */
	uint32_t tx_tail;          /* next TX descriptor */
	uint64_t seen;             /* NIC interrupts, as SYS_NET_WAIT last said */
	uint16_t port, ip_id;
	int open;
	struct net_stats st;
} net;

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static inline void put_mac(uint8_t *p, uint64_t mac)
{
	for (int i = 0; i < 6; i++)
		p[i] = (uint8_t)(mac >> (40 - 8 * i));
}

static inline int is_mac(const uint8_t *p, uint64_t mac)
{
	for (int i = 0; i < 6; i++)
		if (p[i] != (uint8_t)(mac >> (40 - 8 * i)))
			return 0;
	return 1;
}

/* The Internet checksum's running sum (RFC 1071): big-endian 16-bit words,
 * an odd last byte padded with zero. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	size_t i;
	for (i = 0; i + 1 < n; i += 2)
		sum += get16(p + i);
	if (i < n)
		sum += (uint32_t)p[i] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The UDP pseudo-header's sum (src, dst, protocol, UDP length). */
static uint32_t csum_pseudo(uint32_t src, uint32_t dst, uint16_t ulen)
{
	return (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + 17 + ulen;
}

static void rx_post(void)
{
	uint32_t t = net.rx_next + RING;
	if (t != net.rx_tail) {
		net.rx_tail = t;
		sys_net_rxtail(t);
		net.st.rx_posts++;
	}
}

/* Parse the frame of RX descriptor slot s (len bytes): the payload's length
 * (copied into buf, at most cap bytes) if it is a UDP datagram for us, else
 * -1 (dropped, counted). */
static long rx_parse(uint32_t s, uint32_t len, uint16_t *from, void *buf, size_t cap)
{
	const uint8_t *f = net.rxbuf + (size_t)s * NET_BUF_SIZE;
	if (len < HDRS || len > NET_BUF_SIZE)
		goto malformed;
	if (!is_mac(f, REPRISE_NET_GUEST_MAC) || get16(f + 12) != 0x0800)
		goto not_ours;

	const uint8_t *ip = f + ETH_HLEN;
	uint32_t ihl = (uint32_t)(ip[0] & 15) * 4, tot = get16(ip + 2);
	if (ip[0] >> 4 != 4 || ihl < IP_HLEN || tot < ihl + UDP_HLEN || tot > len - ETH_HLEN)
		goto malformed;
	if (csum_fold(csum_add(0, ip, ihl)) != 0)
		goto bad_csum;
	if (get16(ip + 6) & 0x3FFF)        /* MF or a fragment offset */
		goto malformed;
	uint32_t src = get32(ip + 12), dst = get32(ip + 16);
	if (ip[9] != 17 || src != REPRISE_NET_HOST_IP || dst != REPRISE_NET_GUEST_IP)
		goto not_ours;

	const uint8_t *udp = ip + ihl;
	uint32_t ulen = get16(udp + 4);
	if (ulen < UDP_HLEN || ulen > tot - ihl)
		goto malformed;
	if (get16(udp + 2) != net.port)
		goto not_ours;
	if (get16(udp + 6) != 0 &&
	    csum_fold(csum_add(csum_pseudo(src, dst, (uint16_t)ulen), udp, ulen)) != 0)
		goto bad_csum;

	size_t n = ulen - UDP_HLEN;
	if (n > cap) {
		n = cap;
		net.st.rx_truncated++;
	}
	memcpy(buf, udp + UDP_HLEN, n);
	if (from)
		*from = get16(udp);
	net.st.rx_datagrams++;
	return (long)n;

malformed:
	net.st.rx_malformed++;
	return -1;
not_ours:
	net.st.rx_not_ours++;
	return -1;
bad_csum:
	net.st.rx_bad_csum++;
	return -1;
}

int net_open(uint16_t port)
{
	if (net.open)
		return -EBUSY;
	vdesc *rx = ualloc(RING * sizeof *rx), *tx = ualloc(RING * sizeof *tx);
	uint8_t *rxbuf = ualloc(RING * NET_BUF_SIZE), *txbuf = ualloc(RING * NET_BUF_SIZE);
	if (!rx || !tx || !rxbuf || !txbuf)
		return -REPRISE_ENOMEM;
	for (uint32_t i = 0; i < RING; i++) {
		rx[i].buf = (uint64_t)(rxbuf + (size_t)i * NET_BUF_SIZE);
		rx[i].len = NET_BUF_SIZE;
		rx[i].flags = 0;
		rx[i].pad = 0;
		tx[i].buf = (uint64_t)(txbuf + (size_t)i * NET_BUF_SIZE);
		tx[i].len = 0;
		tx[i].flags = 0;
		tx[i].pad = 0;
	}
	long r = sys_net_setup(rx, tx);
	if (r < 0)
		return (int)r;   /* the memory stays taken (a bump allocator) */
	net.rx = rx;
	net.tx = tx;
	net.rxbuf = rxbuf;
	net.txbuf = txbuf;
	net.rx_next = net.rx_tail = net.tx_tail = 0;
	net.seen = 0;
	net.port = port;
	net.open = 1;
	rx_post();
	return 0;
}

long net_recv(uint16_t *from_port, void *buf, size_t cap)
{
	if (!net.open)
		return -REPRISE_EINVAL;
	for (;;) {
		uint32_t s = net.rx_next % RING;
		vdesc *d = &net.rx[s];
		if (!(d->flags & REPRISE_NIC_DONE)) {
			long c = sys_net_wait(net.seen);
			if (c < 0)
				return c;
			net.seen = (uint64_t)c;
			net.st.waits++;
			continue;
		}
		barrier_compiler();   /* the frame after its DONE flag */
		net.st.rx_frames++;
		long n = rx_parse(s, d->len, from_port, buf, cap);
		d->buf = (uint64_t)(net.rxbuf + (size_t)s * NET_BUF_SIZE);
		d->len = NET_BUF_SIZE;
		d->flags = 0;
		net.rx_next++;
		if (net.rx_next + RING - net.rx_tail >= NET_RX_BATCH)
			rx_post();
		if (n >= 0)
			return n;
	}
}

long net_send(uint16_t to_port, const void *payload, size_t len)
{
	if (!net.open)
		return -REPRISE_EINVAL;
	if (len > NET_MAX_PAYLOAD)
		return -REPRISE_EINVAL;
	uint32_t i = net.tx_tail, s = i % RING;
	uint8_t *f = net.txbuf + (size_t)s * NET_BUF_SIZE;

	put_mac(f, REPRISE_NET_HOST_MAC);
	put_mac(f + 6, REPRISE_NET_GUEST_MAC);
	put16(f + 12, 0x0800);

	uint8_t *ip = f + ETH_HLEN;
	ip[0] = 0x45;                        /* version 4, 5 words */
	ip[1] = 0;
	put16(ip + 2, (uint16_t)(IP_HLEN + UDP_HLEN + len));
	put16(ip + 4, net.ip_id++);
	put16(ip + 6, 0x4000);               /* DF, offset 0 */
	ip[8] = 64;                          /* TTL */
	ip[9] = 17;                          /* UDP */
	put16(ip + 10, 0);
	put32(ip + 12, REPRISE_NET_GUEST_IP);
	put32(ip + 16, REPRISE_NET_HOST_IP);
	put16(ip + 10, csum_fold(csum_add(0, ip, IP_HLEN)));

	uint8_t *udp = ip + IP_HLEN;
	uint16_t ulen = (uint16_t)(UDP_HLEN + len);
	put16(udp, net.port);
	put16(udp + 2, to_port);
	put16(udp + 4, ulen);
	put16(udp + 6, 0);
	memcpy(udp + UDP_HLEN, payload, len);
	uint16_t c = csum_fold(csum_add(csum_pseudo(REPRISE_NET_GUEST_IP, REPRISE_NET_HOST_IP, ulen),
					udp, ulen));
	put16(udp + 6, c ? c : 0xFFFF);      /* 0 would mean "no checksum" */

	size_t flen = HDRS + len;
	if (flen < ETH_MIN) {
		memset(f + flen, 0, ETH_MIN - flen);
		flen = ETH_MIN;
	}
	vdesc *d = &net.tx[s];
	d->buf = (uint64_t)f;
	d->len = (uint16_t)flen;
	d->flags = 0;
	net.tx_tail = i + 1;
	long r = sys_net_txtail(i + 1);    /* the device sends it during this exit */
	if (r < 0)
		return r;
	if (!(d->flags & REPRISE_NIC_DONE)) {
		net.st.tx_not_done++;
		return -REPRISE_EIO;
	}
	net.st.tx_frames++;
	return (long)len;
}

const struct net_stats *net_stats(void)
{
	return &net.st;
}
