package nvrtc

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseUsage(t *testing.T) {
	cases := []struct {
		name, log string
		want      map[string]Usage
		err       string
	}{
		{
			name: "ptxas of CUDA 11.8",
			log: `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gelu_bwd' for 'sm_90'
ptxas info    : Function properties for gelu_bwd
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 64 registers
ptxas info    : Compiling entry function 'ln_fwd' for 'sm_90'
ptxas info    : Function properties for ln_fwd
ptxas         .     8 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 255 registers, 256 bytes smem
`,
			want: map[string]Usage{
				"gelu_bwd": {Registers: 64},
				"ln_fwd":   {Registers: 255, SpillBytes: 32, StackBytes: 8, SharedBytes: 256},
			},
		},
		{
			name: "a newer ptxas's fields and CRLF",
			log: "ptxas info    : Compiling entry function 'k' for 'sm_90a'\r\n" +
				"ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n" +
				"ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\r\n",
			want: map[string]Usage{"k": {Registers: 40, SharedBytes: 1024}},
		},
		{
			name: "a kernel without its register line",
			log:  "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Compiling entry function 'j' for 'sm_90'\nptxas info    : Used 8 registers\n",
			err:  "names kernel k but gives no register count",
		},
		{name: "no report at all", log: "", err: "names no kernel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseUsage(c.log)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestWarpsPerSM(t *testing.T) {
	for _, c := range []struct{ regs, want int }{{32, 64}, {40, 51}, {64, 32}, {77, 25}, {126, 16}, {255, 8}} {
		if got := (Usage{Registers: c.regs}).WarpsPerSM(); got != c.want {
			t.Errorf("%d registers: %d warps per SM, want %d", c.regs, got, c.want)
		}
	}
}
