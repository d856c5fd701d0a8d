/* execve of what is not a plain executable, as Linux does it: "#!"
   scripts with and without an argument, a script whose interpreter is a
   script, a loop of them, a missing interpreter, a file without execute
   permission, a text file, a directory. The interpreter is this program
   (/proc/self/exe), which prints the argv it was given, paths under its
   scratch directory by their base names, so the output is the same
   natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[64];

static void script(const char *name, const char *text, mode_t mode) {
	char path[128];
	snprintf(path, sizeof path, "%s/%s", base, name);
	int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (write(f, text, strlen(text)) < 0)
		exit(1);
	close(f);
	chmod(path, mode);
}

static void run(const char *name) {
	char path[128];
	snprintf(path, sizeof path, "%s/%s", base, name);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (name[0] == '.') { /* by a relative name: the one the interpreter and AT_EXECFN get */
			chdir(base);
			strcpy(path, name);
		}
		char *argv[] = {"argv0", "x", "y", NULL};
		char *envp[] = {"EXECTEST=show", NULL};
		execve(path, argv, envp);
		printf("%s: %s\n", name, strerror(errno));
		fflush(stdout);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
}

int main(int argc, char **argv) {
	const char *show = getenv("EXECTEST");
	if (show) {
		printf("ran:");
		for (int i = 0; i < argc; i++) {
			const char *a = argv[i], *slash = strrchr(a, '/');
			printf(" [%s]", strncmp(a, "/tmp/exectest", 13) == 0 && slash ? slash + 1 : a);
		}
		const char *fn = (const char *)getauxval(AT_EXECFN), *slash = strrchr(fn, '/');
		printf(" execfn %s\n", strncmp(fn, "/tmp/exectest", 13) == 0 && slash ? slash + 1 : fn);
		return 0;
	}
	strcpy(base, "/tmp/exectestXXXXXX");
	if (!mkdtemp(base))
		return 1;
	char line[256];
	script("s1", "#!/proc/self/exe  one arg  \n", 0755);
	run("s1");
	script("s2", "#!/proc/self/exe\necho ignored\n", 0755);
	run("s2");
	run("./s2");
	snprintf(line, sizeof line, "#! %s/s1\n", base);
	script("s3", line, 0755);
	run("s3");
	snprintf(line, sizeof line, "#!%s/s4 again\n", base);
	script("s4", line, 0755);
	run("s4");
	script("s5", "#!/no/such/interpreter\n", 0755);
	run("s5");
	script("s6", "#!/proc/self/exe\n", 0644);
	run("s6");
	script("s7", "echo plain text\n", 0755);
	run("s7");
	script("s8", "#!\n", 0755);
	run("s8");
	char dir[128];
	snprintf(dir, sizeof dir, "%s/d", base);
	mkdir(dir, 0755);
	run("d");
	const char *names[] = {"s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"};
	for (int i = 0; i < 8; i++) {
		char path[128];
		snprintf(path, sizeof path, "%s/%s", base, names[i]);
		unlink(path);
	}
	rmdir(dir);
	rmdir(base);
	return 0;
}
