/* printf-style formatting: %d %i %u %x %X %s %c %p %%, flags '-' '0',
 * width, l/ll/z/h modifiers. */
#include <reprise/ulib.h>

struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len] = c;
	o->len++;
}

static void pad(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

int vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
	struct out o = { buf, cap, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		int left = 0, zero = 0, width = 0, lng = 0;
		for (;; fmt++) {
			if (*fmt == '-')
				left = 1;
			else if (*fmt == '0')
				zero = 1;
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		for (;; fmt++) {
			if (*fmt == 'l' || *fmt == 'z')
				lng = 1;
			else if (*fmt != 'h')
				break;
		}
		char tmp[24];
		const char *s = tmp;
		int n = 0, neg = 0;
		uint64_t u;
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			neg = v < 0;
			u = neg ? -(uint64_t)v : (uint64_t)v;
			goto dec;
		}
		case 'u':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
		dec:
			do {
				tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
				u /= 10;
			} while (u);
			s = &tmp[sizeof tmp - n];
			break;
		case 'p':
			u = (uint64_t)va_arg(ap, void *);
			put(&o, '0');
			put(&o, 'x');
			width = width > 2 ? width - 2 : 0;
			goto hex;
		case 'x':
		case 'X':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
		hex: {
			const char *dig = *fmt == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
			do {
				tmp[sizeof tmp - 1 - n++] = dig[u & 15];
				u >>= 4;
			} while (u);
			s = &tmp[sizeof tmp - n];
			break;
		}
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			n = 1;
			break;
		case 's':
			s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			n = (int)strlen(s);
			break;
		case '%':
			put(&o, '%');
			continue;
		case 0:
			fmt--;
			continue;
		default:
			put(&o, '%');
			put(&o, *fmt);
			continue;
		}
		int w = n + neg;
		if (!left && !zero)
			pad(&o, ' ', width - w);
		if (neg)
			put(&o, '-');
		if (!left && zero)
			pad(&o, '0', width - w);
		for (int i = 0; i < n; i++)
			put(&o, s[i]);
		if (left)
			pad(&o, ' ', width - w);
	}
	if (cap)
		buf[o.len < cap ? o.len : cap - 1] = 0;
	return (int)o.len;
}

int snprintf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}

static int vprint(const char *prefix, const char *fmt, va_list ap, int nl)
{
	char buf[PRINTF_BUF];
	size_t p = 0;
	while (prefix && prefix[p])
		buf[p] = prefix[p], p++;
	int n = vsnprintf(buf + p, sizeof buf - p - 1, fmt, ap);
	size_t len = p + ((size_t)n < sizeof buf - p - 1 ? (size_t)n : sizeof buf - p - 2);
	if (nl)
		buf[len++] = '\n';
	sys_write(buf, len);
	return (int)len;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vprint(0, fmt, ap, 0);
	va_end(ap);
	return r;
}

void truth(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("truth: ", fmt, ap, 1);
	va_end(ap);
}

int puts(const char *s)
{
	return printf("%s\n", s);
}
