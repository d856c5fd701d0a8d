/* Supplementary groups, as Linux keeps them: getgroups (the count for a
   size of 0, EINVAL for a short list), /proc/self/status's Groups line,
   a file readable through one of them and not through none, setgroups
   keeping the list and refused another (EPERM for an unprivileged user).
   argv[1] is a file of group 4242, mode 0640, and argv[2] one of group
   4244. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "result.h"

int main(int argc, char **argv) {
	gid_t list[8];
	int n = getgroups(0, NULL);
	printf("count: %d\n", n);
	result("short list", getgroups(1, list));
	n = getgroups(8, list);
	printf("groups:");
	for (int i = 0; i < n; i++)
		printf(" %d", list[i]);
	printf("\n");
	FILE *st = fopen("/proc/self/status", "r");
	char line[256];
	while (st && fgets(line, sizeof line, st))
		if (strncmp(line, "Groups:", 7) == 0)
			printf("status %s", line);
	result("read through a supplementary group", access(argv[1], R_OK));
	result("write through it (0640)", access(argv[1], W_OK));
	result("read through no group of ours", access(argv[2], R_OK));
	result("setgroups the same", setgroups(n, list));
	gid_t other[] = {1};
	result("setgroups another", setgroups(1, other));
	return 0;
}
