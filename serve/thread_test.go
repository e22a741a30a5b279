package serve

import (
	"strings"
	"syscall"
	"testing"

	"convrep/internal/torch"
	"convrep/models"
)

// With Config.Thread, every forward pass runs on that thread (the one the model was loaded on), and a panic
// there is the pass's error, not the process's end.
func TestForwardPassesRunOnTheGivenThread(t *testing.T) {
	th := torch.NewThread()
	var want int
	th.Do(func() { want = syscall.Gettid() })
	var got []int
	embed := onThread(th, func(rows []models.Encoded) ([][]float32, error) {
		got = append(got, syscall.Gettid())
		if len(rows) == 0 {
			panic("no rows")
		}
		return [][]float32{{1}}, nil
	})
	for i := 0; i < 3; i++ {
		if _, err := embed([]models.Encoded{{IDs: []int64{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range got {
		if id != want {
			t.Fatalf("a forward pass ran on thread %d, want %d", id, want)
		}
	}
	if _, err := embed(nil); err == nil || !strings.Contains(err.Error(), "panicked: no rows") {
		t.Fatalf("a panic on the thread gave %v", err)
	}
}
