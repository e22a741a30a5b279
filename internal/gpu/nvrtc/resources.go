package nvrtc

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Usage is what ptxas reports for one kernel built for a real GPU: the registers each thread holds, the bytes
// it spills to local memory (stores plus loads: registers moved through the cache hierarchy, DRAM at worst),
// its stack frame, and its static shared memory per block. Registers decide how many blocks an SM holds at
// once (65,536 a Hopper or Ampere SM shares out), so how many rows a row kernel has in flight.
type Usage struct {
	Registers, SpillBytes, StackBytes, SharedBytes int
}

// WarpsPerSM is how many warps of the kernel an SM of 65,536 registers and 64 warps holds at once as far as
// registers go: each warp's registers are allocated in units of 256 (8 a thread).
func (u Usage) WarpsPerSM() int {
	perWarp := (u.Registers + 7) / 8 * 8 * 32
	return min(64, 65536/perWarp)
}

// Resources compiles src for the real architecture sm_<arch>, with Compile's options and ptxas's report
// (--ptxas-options=-v), and returns each kernel's Usage by name, read from NVRTC's log. Like Compile it needs
// NVRTC and no GPU: what the compiler decides about registers is known before any device time is spent. The
// figures are those of this NVRTC's ptxas; a GPU host's newer one, which compiles the PTX at load time, can
// differ by a few registers.
func Resources(src, name string, arch int) (map[string]Usage, error) {
	_, log, err := compile(src, name, "sm", arch, "--ptxas-options=-v")
	if err != nil {
		return nil, err
	}
	u, err := parseUsage(log)
	if err != nil {
		return nil, fmt.Errorf("nvrtc: compile %s for sm_%d: %w", name, arch, err)
	}
	return u, nil
}

var (
	entryLine = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	frameLine = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	usedLine  = regexp.MustCompile(`Used (\d+) registers`)
	smemField = regexp.MustCompile(`(\d+) bytes smem`)
)

// parseUsage reads ptxas's verbose report, whose lines for one kernel are, in order:
//
//	ptxas info    : Compiling entry function 'NAME' for 'sm_90'
//	ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 64 registers, 256 bytes smem[, more fields]
//
// A kernel whose report lacks its "Used" line is an error, not a zero: the format changed.
func parseUsage(log string) (map[string]Usage, error) {
	out := map[string]Usage{}
	var name string
	var u Usage
	flush := func() error {
		if name == "" {
			return nil
		}
		if u.Registers == 0 {
			return fmt.Errorf("ptxas's report names kernel %s but gives no register count", name)
		}
		out[name] = u
		return nil
	}
	for _, line := range strings.Split(log, "\n") {
		if m := entryLine.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			name, u = m[1], Usage{}
			continue
		}
		if name == "" {
			continue
		}
		if m := frameLine.FindStringSubmatch(line); m != nil {
			u.StackBytes = atoi(m[1])
			u.SpillBytes = atoi(m[2]) + atoi(m[3])
		}
		if m := usedLine.FindStringSubmatch(line); m != nil {
			u.Registers = atoi(m[1])
			if s := smemField.FindStringSubmatch(line); s != nil {
				u.SharedBytes = atoi(s[1])
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ptxas's report names no kernel")
	}
	return out, nil
}

// atoi is strconv.Atoi for the report's digit runs, which the patterns above guarantee.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
