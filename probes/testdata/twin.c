/* A second static twin(): two functions with one name. */
static __attribute__((noinline, used)) int twin(int x) { return x + 2; }

int call_twin(int x) { return twin(x); }
