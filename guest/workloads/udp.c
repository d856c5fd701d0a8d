/*
 * udp: a UDP receiver over the paravirtual NIC (lib/net.c), InSight's
 * network correctness experiment.
 *
 *   udp [port=P] [count=N]
 *       listens on 10.0.2.15:P (default 7777; with `reprise run --udp
 *       127.0.0.1:P` host datagrams to 127.0.0.1:P arrive here) and receives
 *       datagrams until it has N of them (default 100; count=0: no limit) or
 *       one whose payload is exactly the 4 bytes "STOP".
 *
 * Output: first `truth: port=P`, at the end
 *   truth: received=N bytes=B fnv=0x<16 hex> sum=0x<16 hex>
 *   truth: result=ok
 * (exit 0). No NIC attached: `truth: result=FAIL no-nic`, exit 3; a bad
 * argument or a network error: `truth: result=FAIL <why>`, exit 1.
 *
 * Each datagram is answered, to the port it came from (host 127.0.0.1), with
 * the ASCII payload
 *   "ACK <seq> <h>"
 * where seq is the count of datagrams received so far including this one
 * (decimal, 1 for the first) and h its payload's FNV-1a 64 as 16 lowercase
 * hex digits (no 0x). The STOP datagram is answered "ACK STOP <received>"
 * (decimal) and counts in nothing below.
 *
 * ---- for the host side of a test (mirror these exactly) ----
 *
 * FNV-1a 64 (include/reprise/fnv.h): h = 0xcbf29ce484222325; for each byte
 * b: h ^= b; h *= 0x100000001b3 (mod 2^64). With p_1 .. p_N the payloads
 * received (STOP excluded), in arrival order:
 *
 *   received = N
 *   bytes    = len(p_1) + ... + len(p_N)
 *   fnv      = FNV-1a 64 of the concatenation p_1 || p_2 || ... || p_N
 *              (ORDER-DEPENDENT; 0xcbf29ce484222325 when N = 0)
 *   sum      = FNV-1a64(p_1) + ... + FNV-1a64(p_N) mod 2^64
 *              (ORDER-INDEPENDENT: computable from what the senders sent,
 *              whatever the interleaving; 0 when N = 0)
 *
 * printed as 0x + 16 lowercase hex digits. In Go:
 *
 *     var sum uint64
 *     for _, p := range sent { h := fnv.New64a(); h.Write(p); sum += h.Sum64() }
 *
 * and, in arrival order, one fnv.New64a() fed every payload for fnv. A
 * payload is at most NET_MAX_PAYLOAD (1472) bytes; an empty one counts.
 */
#include <reprise/ulib.h>

static uint8_t pkt[NET_MAX_PAYLOAD];

static void print_stats(void)
{
	const struct net_stats *s = net_stats();
	truth("net rx_frames=%lu rx_datagrams=%lu malformed=%lu not_ours=%lu bad_csum=%lu "
	      "tx_frames=%lu tx_not_done=%lu",
	      (unsigned long)s->rx_frames, (unsigned long)s->rx_datagrams,
	      (unsigned long)s->rx_malformed, (unsigned long)s->rx_not_ours,
	      (unsigned long)s->rx_bad_csum, (unsigned long)s->tx_frames,
	      (unsigned long)s->tx_not_done);
}

int wl_udp(const struct args *a)
{
	uint64_t port = arg_u64(a, "port", 7777), count = arg_u64(a, "count", 100);
	truth("port=%lu", (unsigned long)port);
	if (port < 1 || port > 65535) {
		truth("result=FAIL bad-args port=%lu (1..65535)", (unsigned long)port);
		return 1;
	}
	int r = net_open((uint16_t)port);
	if (r == -REPRISE_EIO) {
		truth("result=FAIL no-nic");
		return 3;
	}
	if (r < 0) {
		truth("result=FAIL net_open err=%d", r);
		return 1;
	}

	uint64_t received = 0, bytes = 0, fnv = FNV1A64_INIT, sum = 0;
	char ack[64];
	while (count == 0 || received < count) {
		uint16_t from;
		long n = net_recv(&from, pkt, sizeof pkt);
		if (n < 0) {
			truth("result=FAIL net_recv err=%ld received=%lu", n, (unsigned long)received);
			print_stats();
			return 1;
		}
		int alen;
		int stop = n == 4 && !memcmp(pkt, "STOP", 4);
		if (stop) {
			alen = snprintf(ack, sizeof ack, "ACK STOP %lu", (unsigned long)received);
		} else {
			uint64_t h = fnv1a64(pkt, (size_t)n);
			received++;
			bytes += (uint64_t)n;
			fnv = fnv1a64_update(fnv, pkt, (size_t)n);
			sum += h;
			alen = snprintf(ack, sizeof ack, "ACK %lu %016lx", (unsigned long)received,
					(unsigned long)h);
		}
		long s = net_send(from, ack, (size_t)alen);
		if (s < 0) {
			truth("result=FAIL net_send err=%ld received=%lu", s, (unsigned long)received);
			print_stats();
			return 1;
		}
		if (stop)
			break;
	}
	truth("received=%lu bytes=%lu fnv=0x%016lx sum=0x%016lx", (unsigned long)received,
	      (unsigned long)bytes, (unsigned long)fnv, (unsigned long)sum);
	truth("result=ok");
	return 0;
}
