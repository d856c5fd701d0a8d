/*
 * branchy: branch-dense code, the kind real programs are made of and the
 * software branch counter pays most for: short basic blocks, data-dependent
 * branches, calls in loops. Over n pseudo-random integers (xorshift, from
 * seed) it runs, rounds times:
 *   - a recursive quicksort (median of three, insertion sort below 16);
 *   - n binary searches for values drawn from the same stream;
 *   - an open-hashing table (chained, 2^k buckets): n inserts, n lookups;
 *   - a bytecode interpreter (a switch loop) computing a checksum.
 * Every result is a checksum of the data, printed as truth and checked where
 * it can be checked in place (sortedness, hits found, chain totals).
 */
#include <reprise/ulib.h>

#define NOIPA __attribute__((noipa))

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void swap(uint32_t *a, uint32_t *b)
{
	uint32_t t = *a;
	*a = *b;
	*b = t;
}

static void insertion_sort(uint32_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		size_t j = i;
		while (j > 0 && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

NOIPA static void quicksort(uint32_t *a, size_t n)
{
	while (n > 16) {
		size_t mid = n / 2;
		if (a[mid] < a[0])
			swap(&a[mid], &a[0]);
		if (a[n - 1] < a[0])
			swap(&a[n - 1], &a[0]);
		if (a[n - 1] < a[mid])
			swap(&a[n - 1], &a[mid]);
		uint32_t pivot = a[mid];
		size_t i = 0, j = n - 1;
		for (;;) {
			while (a[i] < pivot)
				i++;
			while (a[j] > pivot)
				j--;
			if (i >= j)
				break;
			swap(&a[i], &a[j]);
			i++;
			j--;
		}
		/* recurse into the smaller side: the stack stays O(log n) */
		if (j + 1 < n - j - 1) {
			quicksort(a, j + 1);
			a += j + 1;
			n -= j + 1;
		} else {
			quicksort(a + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	insertion_sort(a, n);
}

NOIPA static int bsearch_u32(const uint32_t *a, size_t n, uint32_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] < v)
			lo = mid + 1;
		else if (a[mid] > v)
			hi = mid;
		else
			return 1;
	}
	return 0;
}

struct node {
	uint32_t key, count;
	struct node *next;
};

struct table {
	struct node **buckets;
	struct node *pool;
	size_t mask, used;
};

NOIPA static void table_add(struct table *t, uint32_t key)
{
	struct node **b = &t->buckets[(key * 2654435761u) & t->mask];
	for (struct node *p = *b; p; p = p->next) {
		if (p->key == key) {
			p->count++;
			return;
		}
	}
	struct node *p = &t->pool[t->used++];
	p->key = key;
	p->count = 1;
	p->next = *b;
	*b = p;
}

NOIPA static uint32_t table_count(const struct table *t, uint32_t key)
{
	for (const struct node *p = t->buckets[(key * 2654435761u) & t->mask]; p; p = p->next)
		if (p->key == key)
			return p->count;
	return 0;
}

/* A tiny stack machine: the switch dispatch is what interpreters pay. */
enum { OP_PUSH, OP_ADD, OP_XOR, OP_MUL, OP_OVER, OP_SWAP, OP_DEC, OP_JNZ, OP_HALT };

/* acc = arg; for (i = 40; i; i--) acc = (acc * 31 ^ i) + 7 */
static const uint8_t program[] = {
	OP_PUSH, 40,            /* 0: acc i */
	OP_SWAP,                /* 2: i acc */
	OP_PUSH, 31, OP_MUL,    /* 3: i acc*31 */
	OP_OVER, OP_XOR,        /* 6: i acc*31^i */
	OP_PUSH, 7, OP_ADD,     /* 8: i acc' */
	OP_SWAP, OP_DEC,        /* 11: acc' i-1 */
	OP_JNZ, 2,              /* 13: loop while i */
	OP_HALT,                /* 15 */
};

NOIPA static uint64_t interpret(const uint8_t *code, uint64_t arg)
{
	uint64_t st[8] = { arg };
	unsigned sp = 1;
	for (size_t pc = 0;;) {
		switch (code[pc++]) {
		case OP_PUSH: st[sp++ & 7] = code[pc++]; break;
		case OP_ADD: sp--; st[(sp - 1) & 7] += st[sp & 7]; break;
		case OP_XOR: sp--; st[(sp - 1) & 7] ^= st[sp & 7]; break;
		case OP_MUL: sp--; st[(sp - 1) & 7] *= st[sp & 7]; break;
		case OP_OVER: st[sp & 7] = st[(sp - 2) & 7]; sp++; break;
		case OP_SWAP: {
			uint64_t t = st[(sp - 1) & 7];
			st[(sp - 1) & 7] = st[(sp - 2) & 7];
			st[(sp - 2) & 7] = t;
			break;
		}
		case OP_DEC: st[(sp - 1) & 7]--; break;
		case OP_JNZ: {
			uint8_t to = code[pc++];
			if (st[(sp - 1) & 7])
				pc = to;
			break;
		}
		default: return st[0];
		}
	}
}

int wl_branchy(const struct args *a)
{
	size_t n = arg_u64(a, "n", 200000);
	uint64_t rounds = arg_u64(a, "rounds", 1), seed = arg_u64(a, "seed", 1);
	if (n < 2 || n > (1u << 22) || rounds == 0 || seed == 0) {
		truth("result=FAIL bad arguments (n in [2, 4194304], rounds and seed > 0)");
		return 2;
	}
	size_t nb = 1;
	while (nb < n)
		nb <<= 1;
	uint32_t *data = ualloc(n * sizeof *data);
	struct table t = { .buckets = ualloc(nb * sizeof *t.buckets),
			   .pool = ualloc(n * sizeof *t.pool), .mask = nb - 1 };
	if (!data || !t.buckets || !t.pool) {
		truth("result=FAIL out of memory for n=%lu", (unsigned long)n);
		return 1;
	}
	uint64_t sorted_sum = 0, found = 0, distinct = 0, total = 0, interp = 0;
	int ok = 1;
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t s = seed + r;
		for (size_t i = 0; i < n; i++)
			data[i] = (uint32_t)xorshift(&s) % (uint32_t)(4 * n);
		quicksort(data, n);
		for (size_t i = 1; i < n; i++)
			if (data[i - 1] > data[i])
				ok = 0;
		for (size_t i = 0; i < n; i += 64)
			sorted_sum = sorted_sum * 1099511628211ull + data[i];
		for (size_t i = 0; i < n; i++)
			found += bsearch_u32(data, n, (uint32_t)xorshift(&s) % (uint32_t)(4 * n));
		memset(t.buckets, 0, nb * sizeof *t.buckets);
		t.used = 0;
		for (size_t i = 0; i < n; i++)
			table_add(&t, data[i]);
		distinct += t.used;
		for (size_t i = 0; i < n; i++)
			total += table_count(&t, data[i]) > 0;
		for (size_t i = 0; i < n / 64; i++)
			interp = interp * 31 + interpret(program, data[i]);
	}
	if (total != rounds * n)
		ok = 0;
	truth("n=%lu rounds=%lu sorted=%d sorted_sum=%lu found=%lu distinct=%lu interp=%lu",
	      (unsigned long)n, (unsigned long)rounds, ok, (unsigned long)sorted_sum,
	      (unsigned long)found, (unsigned long)distinct, (unsigned long)interp);
	truth("result=%s", ok ? "ok" : "FAIL");
	return !ok;
}
