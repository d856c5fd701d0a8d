/* Lock ground truth for a Linux program: threads take named pthread locks
   a known number of times, and the program prints, per lock, how many
   acquisitions it made — what lockstat must find.

     counter_lock   mutex, every thread, every iteration
     stats[1]       mutex in an array (a named global + offset), every 4th
     heap lock      mutex on the heap, every 8th (named by its call site)
     try_lock       trylock, every 3rd; a failed try is retried with lock
     queue_lock     mutex around a condition variable: producers signal,
                    consumers wait (the wait releases and retakes it)
     table_lock     rwlock: readers every iteration, a writer every 10th

   Usage: locks THREADS ITERATIONS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t try_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t *heap_lock;

static int iters;
static long counter, stat, heap_count, tries, queued, table[4];
/* Acquisitions, counted by the program itself under each lock. */
static long n_counter, n_stats, n_heap, n_try, n_try_failed, n_queue, n_rd, n_wr;

static void spin(int n) {
	for (volatile int i = 0; i < n; i++)
		;
}

static void *worker(void *arg) {
	long id = (long)arg;
	for (int i = 0; i < iters; i++) {
		pthread_mutex_lock(&counter_lock);
		counter++;
		n_counter++;
		spin(200);
		pthread_mutex_unlock(&counter_lock);
		if (i % 4 == 0) {
			pthread_mutex_lock(&stats[1]);
			stat += id;
			n_stats++;
			pthread_mutex_unlock(&stats[1]);
		}
		if (i % 8 == 0) {
			pthread_mutex_lock(heap_lock);
			heap_count++;
			n_heap++;
			pthread_mutex_unlock(heap_lock);
		}
		if (i % 3 == 0) {
			if (pthread_mutex_trylock(&try_lock) != 0) {
				__atomic_add_fetch(&n_try_failed, 1, __ATOMIC_RELAXED);
				pthread_mutex_lock(&try_lock);
			}
			tries++;
			n_try++;
			spin(100);
			pthread_mutex_unlock(&try_lock);
		}
		pthread_rwlock_rdlock(&table_lock);
		long v = table[i % 4];
		__atomic_add_fetch(&n_rd, 1, __ATOMIC_RELAXED);
		pthread_rwlock_unlock(&table_lock);
		if (i % 10 == 0) {
			pthread_rwlock_wrlock(&table_lock);
			table[i % 4] = v + 1;
			n_wr++;
			pthread_rwlock_unlock(&table_lock);
		}
		/* Even threads produce, odd ones consume what they produced. */
		pthread_mutex_lock(&queue_lock);
		n_queue++;
		if (id % 2 == 0) {
			queued++;
			pthread_cond_signal(&queue_cond);
		} else {
			while (queued == 0) {
				pthread_cond_wait(&queue_cond, &queue_lock);
				n_queue++; /* the wait took queue_lock again */
			}
			queued--;
		}
		pthread_mutex_unlock(&queue_lock);
	}
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 200;
	if (n < 2 || n > 16 || n % 2 != 0) {
		fprintf(stderr, "usage: locks THREADS(even, 2-16) ITERATIONS\n");
		return 2;
	}
	heap_lock = malloc(sizeof *heap_lock);
	pthread_mutex_init(heap_lock, NULL);
	pthread_t t[16];
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("truth counter_lock %ld\n", n_counter);
	printf("truth stats[1] %ld\n", n_stats);
	printf("truth heap %ld\n", n_heap);
	printf("truth try_lock %ld\n", n_try);
	printf("truth try_lock.failed %ld\n", n_try_failed);
	printf("truth queue_lock %ld\n", n_queue);
	printf("truth table_lock.read %ld\n", n_rd);
	printf("truth table_lock.write %ld\n", n_wr);
	printf("counter %ld\n", counter);
	return 0;
}
