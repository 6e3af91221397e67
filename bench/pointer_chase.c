// Memory latency by pointer chase: the load-to-use time of one dependent load at each
// working-set size (a random cyclic permutation of 64-byte lines, so neither the prefetcher nor
// out-of-order execution can overlap loads). Used for the FT16 bound in docs/architecture.md.
//
//   cc -O2 -o /tmp/pointer_chase bench/pointer_chase.c && /tmp/pointer_chase [huge]
//
// With `huge` the buffer is madvise(MADV_HUGEPAGE)d (transparent huge pages in "madvise" mode),
// which separates the TLB's share of the latency from the cache's.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define HUGE_PAGE (2u << 20)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t xorshift(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

int main(int argc, char **argv) {
    int huge = argc > 1 && strcmp(argv[1], "huge") == 0;
    if (argc > 1 && !huge) {
        fprintf(stderr, "pointer_chase: expected no argument or `huge`, got '%s'\n", argv[1]);
        return 2;
    }
    const size_t sizes_kib[] = {16, 256, 1024, 2048, 4096, 16384, 65536, 262144};
    for (size_t s = 0; s < sizeof sizes_kib / sizeof *sizes_kib; s++) {
        size_t bytes = sizes_kib[s] * 1024, n = bytes / LINE;
        size_t alloc = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        char *buf = aligned_alloc(HUGE_PAGE, alloc);
        size_t *perm = malloc(n * sizeof *perm);
        if (!buf || !perm) {
            fprintf(stderr, "pointer_chase: out of memory at %zu KiB\n", sizes_kib[s]);
            return 1;
        }
        if (huge)
            madvise(buf, alloc, MADV_HUGEPAGE);
        for (size_t i = 0; i < n; i++) perm[i] = i;
        for (size_t i = n - 1; i > 0; i--) {  // Fisher-Yates: one cycle through every line
            size_t j = xorshift() % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < n; i++) *(void **)(buf + perm[i] * LINE) = buf + perm[(i + 1) % n] * LINE;
        void *p = buf + perm[0] * LINE;
        const size_t iters = 5000000;
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
            double t0 = now_s();
            for (size_t i = 0; i < iters; i++) p = *(void **)p;
            double ns = (now_s() - t0) * 1e9 / iters;
            if (ns < best) best = ns;
        }
        printf("%8zu KiB %7.1f ns per load (best of 5)%s\n", sizes_kib[s], best, p ? "" : " ");
        free(buf);
        free(perm);
    }
    return 0;
}
