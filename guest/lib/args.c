/* The command line: "name key=val key=val word ...". */
#include <reprise/ulib.h>

void args_parse(struct args *a, const char *cmdline)
{
	size_t i = 0;
	for (; cmdline[i] && i < sizeof a->buf - 1; i++)
		a->buf[i] = cmdline[i];
	a->buf[i] = 0;
	a->name = 0;
	a->n = 0;
	char *p = a->buf;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			*p++ = 0;
		if (!*p)
			break;
		char *w = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		if (*p)
			*p++ = 0;
		if (!a->name) {
			a->name = w;
			continue;
		}
		if (a->n == ARGS_MAX)
			break;
		char *eq = strchr(w, '=');
		if (eq) {
			*eq = 0;
			a->a[a->n].key = w;
			a->a[a->n].val = eq + 1;
		} else {
			a->a[a->n].key = 0;
			a->a[a->n].val = w;
		}
		a->n++;
	}
	if (!a->name)
		a->name = "";
}

const char *arg_str(const struct args *a, const char *key, const char *def)
{
	for (int i = a->n - 1; i >= 0; i--)
		if (a->a[i].key && !strcmp(a->a[i].key, key))
			return a->a[i].val;
	return def;
}

uint64_t arg_u64(const struct args *a, const char *key, uint64_t def)
{
	const char *s = arg_str(a, key, 0);
	if (!s)
		return def;
	int ok;
	uint64_t v = parse_u64(s, &ok);
	if (!ok) {
		printf("bad number %s=%s, using %lu\n", key, s, (unsigned long)def);
		return def;
	}
	return v;
}

const char *arg_pos(const struct args *a, int i)
{
	for (int k = 0; k < a->n; k++)
		if (!a->a[k].key && i-- == 0)
			return a->a[k].val;
	return 0;
}
