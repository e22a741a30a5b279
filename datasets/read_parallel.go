package datasets

import (
	"runtime"
	"sync"
)

// inParallel runs fn(0) ... fn(n-1) on up to GOMAXPROCS goroutines (SGD is 140 files, 400 MB of JSON) and
// returns the results in index order, so the output does not depend on scheduling; on failure it returns
// the error of the lowest index.
func inParallel[T any](n int, fn func(i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(n, runtime.GOMAXPROCS(0)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// concat joins per-file results in order.
func concat(parts [][]Dialogue) []Dialogue {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	all := make([]Dialogue, 0, n)
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}
