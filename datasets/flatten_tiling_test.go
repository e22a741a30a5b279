package datasets

import (
	"slices"
	"testing"
)

// Whatever the shift, the windows start at 0, end at the body's end, hold room tokens each and leave no
// gap, and each window's tokens are the body's at its place.
func TestWindowsTileTheBody(t *testing.T) {
	for n := 0; n <= 23; n++ {
		for room := 1; room <= 9; room++ {
			k := WindowCount(n, room)
			if n > room && (k-1)*room >= n || k*room < n && n > 0 {
				t.Fatalf("n=%d room=%d: %d windows", n, room, k)
			}
			for shift := 0; shift <= k*room-n; shift++ {
				covered := make([]bool, n)
				for j := range k {
					s := WindowStart(n, room, j, shift)
					if s < 0 || (n >= room && s+room > n) || (n < room && s != 0) {
						t.Fatalf("n=%d room=%d shift=%d: window %d starts at %d", n, room, shift, j, s)
					}
					for p := s; p < min(n, s+room); p++ {
						covered[p] = true
					}
				}
				if i := slices.Index(covered, false); i >= 0 {
					t.Fatalf("n=%d room=%d shift=%d: token %d in no window", n, room, shift, i)
				}
			}
		}
	}
	if WindowCount(100, 0) != 1 || WindowStart(100, 0, 0, 5) != 0 {
		t.Error("room 0 (no limit): one window from 0")
	}
}

func TestWindowTokens(t *testing.T) {
	d := &DialogueTokens{Turns: [][][]int32{{{1, 10, 11, 12}, {2, 20}, {1, 30, 31}}}, CLS: 101, SEP: 102}
	body := []int64{1, 10, 11, 12, 2, 20, 1, 30, 31}
	if d.BodyLen(0) != len(body) {
		t.Fatalf("BodyLen %d, want %d", d.BodyLen(0), len(body))
	}
	if got, want := d.Window(0, 0, 0), d.Span(0, 0, 3, 0, false); !slices.Equal(got, want) {
		t.Errorf("the whole body: Window %v, Span %v", got, want)
	}
	for start := range len(body) {
		for room := 1; room <= len(body); room++ {
			want := append(append([]int64{101}, body[start:min(len(body), start+room)]...), 102)
			if got := d.Window(0, start, room); !slices.Equal(got, want) {
				t.Errorf("Window(0, %d, %d) = %v, want %v", start, room, got, want)
			}
		}
	}
}
