/*
 * compute-sanitizer memcheck 2025.3.1 crashes (SIGSEGV) in this program with
 * 4 GPUs visible; it runs clean with 2 GPUs (or 1), without the final
 * allocation, without the destroy, and without the tool. No crate in it: the
 * steps of tests/stream_ordered_allocator.rs's
 * pool_destroy_with_outstanding_allocation, in C.
 *
 *   1. a pool created on device 0 (cudaMemPoolCreate / cuMemPoolCreate),
 *      one allocation from it, written;
 *   2. the pool destroyed with that allocation outstanding (documented to
 *      return at once and release the pool once nothing is outstanding);
 *   3. the allocation read back (its bytes must be the ones written), freed,
 *      the stream synchronised;
 *   4. one stream-ordered allocation from the device's default pool
 *      (cudaMallocAsync / cuMemAllocAsync), freed, synchronised.
 *
 * Usage: pool_destroy_sanitizer_crash [driver] [--no-destroy] [--no-final-allocation]
 * (`driver`: the driver API's twins). Exit 0 and "OK" when every step
 * succeeded and the bytes read back are the ones written; 1 with the failing
 * call otherwise. `run.sh --sanitize` compiles it with nvcc
 * (`nvcc -o <out> pool_destroy_sanitizer_crash.c -lcuda`) and runs it with and
 * without memcheck; its outcome is in summary.json ("known_tool_crash").
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "repro_common.h"

#define N (2u << 20)

#define DRV(call)                                                             \
    do {                                                                      \
        CUresult e_ = (call);                                                 \
        if (e_ != CUDA_SUCCESS) {                                             \
            const char *name_ = "?";                                          \
            cuGetErrorName(e_, &name_);                                       \
            fprintf(stderr, "%s: %s\n", #call, name_);                        \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static unsigned char back[N];

static int check_bytes(void) {
    for (unsigned i = 0; i < N; i++) {
        if (back[i] != 0x5a) {
            fprintf(stderr, "byte %u of the destroyed pool's allocation: 0x%02x, written 0x5a\n",
                    i, back[i]);
            return 1;
        }
    }
    return 0;
}

static int runtime(int destroy, int final_allocation) {
    cudaStream_t s;
    cudaMemPool_t pool;
    struct cudaMemPoolProps props;
    void *p, *q;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    RT(cudaSetDevice(0));
    RT(cudaStreamCreate(&s));
    RT(cudaMemPoolCreate(&pool, &props));
    RT(cudaMallocFromPoolAsync(&p, N, pool, s));
    RT(cudaMemsetAsync(p, 0x5a, N, s));
    RT(cudaStreamSynchronize(s));
    if (destroy)
        RT(cudaMemPoolDestroy(pool));
    RT(cudaMemcpyAsync(back, p, N, cudaMemcpyDeviceToHost, s));
    RT(cudaStreamSynchronize(s));
    RT(cudaFreeAsync(p, s));
    RT(cudaStreamSynchronize(s));
    if (!destroy)
        RT(cudaMemPoolDestroy(pool));
    if (final_allocation) {
        RT(cudaMallocAsync(&q, N, s));
        RT(cudaFreeAsync(q, s));
        RT(cudaStreamSynchronize(s));
    }
    RT(cudaStreamDestroy(s));
    return check_bytes();
}

static int driver(int destroy, int final_allocation) {
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUmemoryPool pool;
    CUmemPoolProps props;
    CUdeviceptr p, q;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    DRV(cuInit(0));
    DRV(cuDeviceGet(&dev, 0));
    DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
    DRV(cuCtxSetCurrent(ctx));
    DRV(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    DRV(cuMemPoolCreate(&pool, &props));
    DRV(cuMemAllocFromPoolAsync(&p, N, pool, s));
    DRV(cuMemsetD8Async(p, 0x5a, N, s));
    DRV(cuStreamSynchronize(s));
    if (destroy)
        DRV(cuMemPoolDestroy(pool));
    DRV(cuMemcpyDtoHAsync(back, p, N, s));
    DRV(cuStreamSynchronize(s));
    DRV(cuMemFreeAsync(p, s));
    DRV(cuStreamSynchronize(s));
    if (!destroy)
        DRV(cuMemPoolDestroy(pool));
    if (final_allocation) {
        DRV(cuMemAllocAsync(&q, N, s));
        DRV(cuMemFreeAsync(q, s));
        DRV(cuStreamSynchronize(s));
    }
    DRV(cuStreamDestroy(s));
    DRV(cuDevicePrimaryCtxRelease(dev));
    return check_bytes();
}

int main(int argc, char **argv) {
    int use_driver = 0, destroy = 1, final_allocation = 1, rc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "driver") == 0) {
            use_driver = 1;
        } else if (strcmp(argv[i], "--no-destroy") == 0) {
            destroy = 0;
        } else if (strcmp(argv[i], "--no-final-allocation") == 0) {
            final_allocation = 0;
        } else {
            fprintf(stderr, "usage: %s [driver] [--no-destroy] [--no-final-allocation]\n", argv[0]);
            return 2;
        }
    }
    rc = use_driver ? driver(destroy, final_allocation) : runtime(destroy, final_allocation);
    if (rc == 0)
        printf("OK: %s API, destroy %s, final allocation %s\n", use_driver ? "driver" : "runtime",
               destroy ? "with one outstanding" : "after the free",
               final_allocation ? "made" : "left out");
    return rc;
}
