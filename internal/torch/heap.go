package torch

/*
#include <features.h>
#include <limits.h>
#include <malloc.h>

// convrep_keep_heap sets glibc's malloc to serve blocks of up to 32 MiB from its heap (M_MMAP_THRESHOLD, the most
// it takes) and never to hand the heap's top back to the kernel (M_TRIM_THRESHOLD at its largest): 1 when both
// took.
static int convrep_keep_heap(void) {
	return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
}

// convrep_mapped_blocks is the number of blocks malloc serves by their own mmap now (mallinfo2 from glibc 2.33).
static size_t convrep_mapped_blocks(void) {
#if __GLIBC_PREREQ(2, 33)
	return mallinfo2().hblks;
#else
	return (size_t)mallinfo().hblks;
#endif
}
*/
import "C"

import (
	"os"
	"strings"
)

// keepHeap makes libtorch's CPU memory a cache, as its CUDA allocator is on a GPU. A training step frees and
// allocates the same large tensors every time (activations, the embeddings' gradient: 31 MiB at 30,522 × 256).
// With glibc's defaults, blocks over a threshold are mapped afresh for each allocation and unmapped when freed,
// and the heap's free top is trimmed, so every step faults all their pages in again. On the development
// machine that cost the compute-bound DSE step 14 % of its speed (71.6 against 83.7 pairs/s, docs/measuring.md).
// Freed memory now stays in the process for the next step; the resident size is the step's peak. A
// GLIBC_TUNABLES that sets any glibc.malloc tunable is the user's choice and is left alone.
func keepHeap() bool {
	if strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.malloc.") {
		return false
	}
	return C.convrep_keep_heap() == 1
}

// heapKept is whether keepHeap took, at start-up.
var heapKept = keepHeap()

// mappedBlocks is the number of blocks glibc's malloc serves by their own mmap now (mallinfo2's hblks).
func mappedBlocks() int { return int(C.convrep_mapped_blocks()) }
