package tsne

import (
	"runtime"
	"sync"
)

// parallelFor runs body over [0, n) in contiguous chunks, one goroutine per CPU. Each index is handled by
// exactly one call, so per-index results do not depend on scheduling.
func parallelFor(n int, body func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		body(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}
