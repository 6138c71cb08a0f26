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
 * The load is held (the fake's FAKE_HOLD, in its constructor, inside the
 * loading thread's dlopen) until every other thread has had the time to
 * find it claimed and wait: a releaser thread, which touches none of the
 * loader's memory, creates the release file HOLD_MS after the hold began.
 * So every run has waiters that see the load's DONE and then read what
 * the loading thread wrote, ordered by DONE's release alone; without the
 * hold, the loading thread could finish before the others ran (under
 * valgrind, threads take turns), and a DONE weakened to Relaxed went
 * unseen in 3 of 10 runs.
 *
 * Each thread checks the effects (the fake's version 13000, its cuInit(7)
 * answering 0); the program prints one line per check and exits 1 where one
 * failed. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 32

int cuDriverGetVersion(int *version);
int probe_init(void);
int probe_driver_version(void);

static pthread_barrier_t start;

/* How long the load is held once it began (ms). */
#define HOLD_MS 500

static char hold_dir[] = "/tmp/cuda-mem-sys-valgrind-hold-XXXXXX";

/* Waits for <hold_dir>/holding (the load began), then HOLD_MS, then creates
 * <hold_dir>/release. System calls only: no memory the loader touches, and
 * no stdio (whose list of open files the fake's fopen also links into,
 * under a glibc lock the tools do not see). */
static void *releaser(void *arg) {
    (void)arg;
    char holding[128], release[128];
    snprintf(holding, sizeof holding, "%s/holding", hold_dir);
    snprintf(release, sizeof release, "%s/release", hold_dir);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 60000 && access(holding, F_OK) != 0; i++) nanosleep(&ms, 0);
    struct timespec hold = {HOLD_MS / 1000, (HOLD_MS % 1000) * 1000000L};
    nanosleep(&hold, 0);
    int fd = open(release, O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) close(fd);
    return 0;
}

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
    pthread_t release_thread;
    if (!mkdtemp(hold_dir) || setenv("FAKE_HOLD", hold_dir, 1) ||
        pthread_create(&release_thread, 0, releaser, 0)) {
        printf("the hold could not be set up\n");
        return 1;
    }
    pthread_barrier_init(&start, 0, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], 0, first_call, &answers[i])) {
            printf("pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], 0);
    pthread_join(release_thread, 0);
    char file[128];
    snprintf(file, sizeof file, "%s/holding", hold_dir);
    unlink(file);
    snprintf(file, sizeof file, "%s/release", hold_dir);
    unlink(file);
    rmdir(hold_dir);
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
