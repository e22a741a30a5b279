package benchcmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The search doubles until the first out-of-memory error and keeps the last batch that fitted; other
// errors and a first batch that does not fit are errors.
func TestFindMaxBatch(t *testing.T) {
	cudaOOM := errors.New("train step: libtorch: CUDA out of memory. Tried to allocate 2.00 GiB")
	cpuOOM := errors.New("train step: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes")
	for _, tc := range []struct {
		name         string
		start, limit int64
		fits         int64 // batches above this fail with oom
		oom          error
		other        int64 // this batch fails with another error
		want         int64
		tried        []int64
		wantErr      string
	}{
		{"fits up to the limit", 8, 1024, 4096, cudaOOM, 0, 1024, []int64{8, 16, 32, 64, 128, 256, 512, 1024}, ""},
		{"cuda oom at 512", 32, 1024, 300, cudaOOM, 0, 256, []int64{32, 64, 128, 256, 512}, ""},
		{"cpu oom at 4", 2, 1024, 2, cpuOOM, 0, 2, []int64{2, 4}, ""},
		{"start not a power of two", 3, 100, 50, cudaOOM, 0, 48, []int64{3, 6, 12, 24, 48, 96}, ""},
		{"first batch too big", 64, 1024, 10, cudaOOM, 0, 0, []int64{64}, "even the first batch 64"},
		{"another error stops the search", 8, 1024, 4096, cudaOOM, 32, 0, []int64{8, 16, 32}, "shape mismatch"},
		{"start above the limit", 2048, 1024, 4096, cudaOOM, 0, 0, nil, "exceeds --max-batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tried []int64
			got, err := findMaxBatch(tc.start, tc.limit, func(b int64) error {
				tried = append(tried, b)
				switch {
				case b == tc.other:
					return fmt.Errorf("train step: shape mismatch")
				case b > tc.fits:
					return tc.oom
				}
				return nil
			})
			if !slices.Equal(tried, tc.tried) {
				t.Errorf("tried %v, want %v", tried, tc.tried)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %d, %v; want an error mentioning %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
