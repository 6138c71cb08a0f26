/* The process's first CUDA calls made by 32 threads at once, under
 * valgrind's race detectors (`cargo xtask valgrind`, docs/loader.md).
 *
 * Plain pthreads, which both tools model: every thread waits at one barrier,
 * then makes the first calls together, through the crate built as a cdylib
 * (`probe.rs`, features dynamic-loading and export-c-names) over the fake
 * driver (abi-proofs/tests/fixtures/fake_libcuda.c as libcuda.so.1, found on
 * the library path):
 *
 * - cuDriverGetVersion, the crate's trampoline by its C name: the driver's
 *   one-time load (one thread loads, the others wait for it and then read
 *   what it wrote), the slot's publication and the trampoline's cache;
 * - probe_init: Rust's inlined call of cuInit(7) (the slot, else the
 *   trampoline);
 * - probe_driver_version: loader::driver(), which reads the loaded library's
 *   state.
 *
 * Each thread checks the effects (the fake's version 13000, its cuInit(7)
 * answering 0); the program prints one line per check and exits 1 where one
 * failed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 32

int cuDriverGetVersion(int *version);
int probe_init(void);
int probe_driver_version(void);

static pthread_barrier_t start;

struct answer {
    int get_version, version, init, driver_version;
};

static void *first_call(void *arg) {
    struct answer *a = arg;
    pthread_barrier_wait(&start);
    a->get_version = cuDriverGetVersion(&a->version);
    a->init = probe_init();
    a->driver_version = probe_driver_version();
    return 0;
}

int main(void) {
    pthread_t threads[THREADS];
    struct answer answers[THREADS] = {{0}};
    pthread_barrier_init(&start, 0, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], 0, first_call, &answers[i])) {
            printf("pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], 0);
    pthread_barrier_destroy(&start);
    int good = 0;
    for (int i = 0; i < THREADS; i++) {
        struct answer *a = &answers[i];
        if (a->get_version == 0 && a->version == 13000 && a->init == 0 && a->driver_version == 13000)
            good++;
        else
            printf("thread %d: cuDriverGetVersion %d (version %d), cuInit(7) %d, driver() version %d\n",
                   i, a->get_version, a->version, a->init, a->driver_version);
    }
    printf("first calls: %d of %d threads answered cuDriverGetVersion 13000, cuInit(7) 0, driver() 13000\n",
           good, THREADS);
    /* How many lookups the driver was asked (2 functions): more than 2, the
     * threads resolved a slot at once and raced to publish it. */
    void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*count)(void) = fake ? (int (*)(void))dlsym(fake, "fake_request_count") : 0;
    if (count) printf("lookups the driver answered: %d\n", count());
    return good == THREADS ? 0 : 1;
}
