/*
 * compute-sanitizer memcheck 2025.3.1 does not know that a graph allocation
 * node's memory is mapped on a peer device: a kernel on device 1 that reads
 * a device-0 graph allocation granted to device 1 read-write (its access
 * descriptors) is reported as "Invalid __global__ read of size 4 bytes ...
 * out of bounds and is 139 TB before the nearest allocation", the kernel is
 * aborted and the context gets cudaErrorLaunchFailure. Without the tool the
 * same program reads the bytes right. Measured on 4 x H100, driver
 * 580.159.04, compute-sanitizer 2025.3.1: tests/graph_memory.rs's
 * rt_memory_nodes_peer_access passes on 2 and 4 GPUs without the tool
 * (bytes read back right, the peer's access flags read-write) and gets 99
 * such reports under memcheck. This program, on 2 x H200 (toolkit 13.0,
 * compute-sanitizer 2025.3.1): plain, exit 0 and the words read right;
 * under memcheck, exit 1 (cudaErrorLaunchFailure) with 65539 errors, the
 * first 100 of them "Invalid __global__ read"; --owner-reads under memcheck,
 * exit 0, 0 errors, 0 bytes leaked. No crate in it: the same steps in CUDA C.
 *
 *   1. on device 0, a graph: an allocation node (cudaGraphAddMemAllocNode)
 *      whose access descriptors grant device 1 read-write, then a memset
 *      node filling it with a 32-bit pattern; instantiated, launched,
 *      synchronised;
 *   2. on device 1 (device 0 with --owner-reads, the control), a kernel
 *      copies the allocation into that device's own memory, which is copied
 *      to the host and checked word by word;
 *   3. everything freed (the graph's allocation with cudaFreeAsync on
 *      device 0, then the graph memory trimmed).
 *
 * Usage: graph_peer_read_memcheck [--owner-reads]
 * Exit 0 and "OK" when every word read back is the pattern; 1 with the
 * failing call or the first wrong word otherwise; 77 with fewer than 2 GPUs
 * (or when device 1 cannot access device 0). `run.sh --sanitize` compiles it
 * with nvcc (`nvcc -o <out> graph_peer_read_memcheck.cu -lcuda`) and runs it plain
 * (must exit 0), under memcheck (the fault: "Invalid __global__ read") and
 * with --owner-reads under memcheck (control: exit 0, 0 errors); its outcome
 * is in summary.json ("known_tool_faults").
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repro_common.h"

#define WORDS (1u << 20) /* 4 MiB */
#define PATTERN 0xC0FFEE5Au

__global__ void copy_u32(unsigned *dst, const unsigned *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

int main(int argc, char **argv)
{
    int owner_reads = argc > 1 && strcmp(argv[1], "--owner-reads") == 0;
    int count = 0, can = 0;
    RT(cudaGetDeviceCount(&count));
    if (count < 2) {
        printf("SKIP: %d GPU(s), the peer read needs 2\n", count);
        return 77;
    }
    RT(cudaDeviceCanAccessPeer(&can, 1, 0));
    if (!can) {
        printf("SKIP: device 1 cannot access device 0's memory\n");
        return 77;
    }
    int reader = owner_reads ? 0 : 1;

    /* 1. The graph on device 0: allocation granted to device 1, memset. */
    RT(cudaSetDevice(0));
    cudaStream_t s;
    RT(cudaStreamCreate(&s));
    cudaGraph_t g;
    RT(cudaGraphCreate(&g, 0));
    cudaMemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = 1;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.accessDescs = &desc;
    p.accessDescCount = 1;
    p.bytesize = WORDS * sizeof(unsigned);
    cudaGraphNode_t alloc, fill;
    RT(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &p));
    unsigned *buf = (unsigned *)p.dptr;
    cudaMemsetParams m;
    memset(&m, 0, sizeof m);
    m.dst = buf;
    m.value = PATTERN;
    m.elementSize = 4;
    m.width = WORDS;
    m.height = 1;
    RT(cudaGraphAddMemsetNode(&fill, g, &alloc, 1, &m));
    cudaGraphExec_t e;
    RT(cudaGraphInstantiate(&e, g, 0));
    RT(cudaGraphLaunch(e, s));
    RT(cudaStreamSynchronize(s));

    /* 2. The reader's kernel copies it into the reader's own memory. */
    RT(cudaSetDevice(reader));
    unsigned *mine;
    RT(cudaMalloc((void **)&mine, WORDS * sizeof(unsigned)));
    copy_u32<<<256, 256>>>(mine, buf, WORDS);
    RT(cudaGetLastError());
    RT(cudaDeviceSynchronize());
    unsigned *host = (unsigned *)malloc(WORDS * sizeof(unsigned));
    if (!host) {
        fprintf(stderr, "malloc failed\n");
        return 1;
    }
    RT(cudaMemcpy(host, mine, WORDS * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < WORDS; i++) {
        if (host[i] != PATTERN) {
            fprintf(stderr, "device %d read word %u as 0x%08x, not 0x%08x\n", reader, i,
                    host[i], PATTERN);
            return 1;
        }
    }
    free(host);
    RT(cudaFree(mine));

    /* 3. Freed. */
    RT(cudaSetDevice(0));
    RT(cudaFreeAsync(buf, s));
    RT(cudaStreamSynchronize(s));
    RT(cudaGraphExecDestroy(e));
    RT(cudaGraphDestroy(g));
    RT(cudaStreamDestroy(s));
    RT(cudaDeviceGraphMemTrim(0));
    printf("OK: device %d read the %u words device 0's graph wrote\n", reader, WORDS);
    return 0;
}
