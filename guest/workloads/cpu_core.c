/* cpu workload core: see cpu_core.h. */
#include "cpu_core.h"

#define BASE 1000000000u

/*
 * sum += sign * m * arctan(1/x), m/x^(2k+1)/(2k+1) term by term. `term` is
 * divided by x^2 in place and the quotient by (2k+1) is folded into `sum`
 * in the same high-to-low pass (sum limbs are int64 and normalised only at
 * the end, so no carry chain runs per term). `lo` skips the leading zero
 * limbs of the shrinking term.
 */
static void arctan_inv(int64_t *sum, uint32_t *term, size_t n, uint32_t m, uint32_t x, int sign)
{
	uint64_t x2 = (uint64_t)x * x, r = m % x;
	size_t lo = 0;
	/* term = m / x */
	term[0] = m / x;
	for (size_t i = 1; i < n; i++) {
		uint64_t cur = r * BASE;
		term[i] = (uint32_t)(cur / x);
		r = cur % x;
	}
	for (size_t i = 0; i < n; i++)
		sum[i] += sign * (int64_t)term[i];
	for (uint64_t k = 1;; k++) {
		uint64_t d = 2 * k + 1, rt = 0, rq = 0;
		while (lo < n && term[lo] == 0)
			lo++;
		if (lo == n)
			break;
		int64_t s = (k & 1) ? -sign : sign;
		for (size_t i = lo; i < n; i++) {
			uint64_t t = rt * BASE + term[i];
			uint32_t q = (uint32_t)(t / x2);
			rt = t % x2;
			term[i] = q;
			uint64_t u = rq * BASE + q;
			rq = u % d;
			sum[i] += s * (int64_t)(u / d);
		}
	}
}

void cpu_pi(char *out, unsigned digits, uint32_t *term, int64_t *sum)
{
	size_t n = cpu_pi_limbs(digits);
	for (size_t i = 0; i < n; i++)
		sum[i] = 0;
	arctan_inv(sum, term, n, 16, 5, 1);
	arctan_inv(sum, term, n, 4, 239, -1);
	/* normalise: carries/borrows from the last limb up */
	int64_t carry = 0;
	for (size_t i = n; i-- > 0;) {
		int64_t v = sum[i] + carry;
		carry = v / (int64_t)BASE;
		v %= (int64_t)BASE;
		if (v < 0) {
			v += BASE;
			carry--;
		}
		sum[i] = v;
	}
	sum[0] += carry * BASE;
	/* digits: integer part (3), then 9 per limb */
	out[0] = (char)('0' + sum[0]);
	unsigned p = 1;
	for (size_t i = 1; p <= digits; i++) {
		uint32_t v = (uint32_t)sum[i];
		char b[9];
		for (int j = 8; j >= 0; j--) {
			b[j] = (char)('0' + v % 10);
			v /= 10;
		}
		for (int j = 0; j < 9 && p <= digits; j++)
			out[p++] = b[j];
	}
	out[p] = 0;
}

const char cpu_pi_known[] =
	"3141592653589793238462643383279502884197169399375105820974944592"
	"3078164062862089986280348253421170679821480865132823066470938446"
	"0955058223172535940812848111745028410270193852110555964462294895"
	"4930381964428810975665933446128475648233786783165271201909145648"
	"5669234603486104543266482133936072602491412737245870066063155881"
	"7488152092096282925409171536436789259036001133053054882046652138"
	"4146951941511609433057270365759591953092186117381932611793105118"
	"5480744623799627495673518857527248912279381830119491298336733624"
	"4065664308602139494639522473719070217986094370277053921717629317"
	"6752384674818467669405132000568127145263560827785771342757789609"
	"1736371787214684409012249534301465495853710507922796892589235420"
	"1995611212902196086403441815981362977477130996051870721134999999"
	"8372978049951059731732816096318595024459455346908302642522308253"
	"3446850352619311881710100031378387528865875332083814206171776691"
	"4730359825349042875546873115956286388235378759375195778185778053"
	"21712268066130019278766111959092164201989";

unsigned cpu_pi_check(const char *out)
{
	for (unsigned i = 0; out[i] && cpu_pi_known[i]; i++)
		if (out[i] != cpu_pi_known[i])
			return i + 1;
	return 0;
}
