package nvrtc

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// maxLog bounds the part of NVRTC's log an error carries: the first messages are the ones to read, and a
// broken kernel file can make thousands of lines.
const maxLog = 4 << 10

// compiles counts the programs given to NVRTC, for the cache's tests.
var compiles atomic.Int64

// Version is the NVRTC release loaded, e.g. 11 8 for Debian's libnvrtc11.2 of CUDA 11.8; the error says why
// no library loads.
func Version() (major, minor int, err error) {
	l, err := lib()
	if err != nil {
		return 0, 0, err
	}
	return l.major, l.minor, nil
}

// options are NVRTC's options for a compile for <kind>_<arch>: compute (a virtual architecture, PTX, what
// convrep loads) or sm (a real one, which Resources has ptxas report on). --use_fast_math is deliberately
// absent: it turns erff, expf and division into approximations, and the kernels' GELU needs an accurate erff.
// C++14 is the newest standard every NVRTC from 11.2 on accepts; -default-device makes every function a device
// function without __device__.
func options(kind string, arch int) []string {
	return []string{fmt.Sprintf("--gpu-architecture=%s_%d", kind, arch), "--std=c++14", "-default-device"}
}

// Compile compiles src, a CUDA C++ program that includes no header, into PTX for the virtual architecture
// compute_<arch> (80 for the A100, 90 for the H100). name is the program's name in NVRTC's messages (e.g.
// "convrep_kernels.cu"). A program that does not compile returns an error holding NVRTC's log, its first
// 4 KiB. Compiles are serialized: they are rare once Cached holds the PTX, and so nothing rests on how
// thread-safe each NVRTC release is.
func Compile(src, name string, arch int) ([]byte, error) {
	ptx, _, err := compile(src, name, "compute", arch)
	return ptx, err
}

// compile runs one program through NVRTC for <kind>_<arch> (options) with extra options after convrep's, and
// returns its PTX and NVRTC's log.
func compile(src, name, kind string, arch int, extra ...string) (ptx []byte, log string, err error) {
	if arch <= 0 {
		return nil, "", fmt.Errorf("nvrtc: compile %s: architecture %d: want a compute capability such as 80 or 90", name, arch)
	}
	l, err := lib()
	if err != nil {
		return nil, "", err
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	compiles.Add(1)
	ptx, log, err = l.compile(src, name, append(options(kind, arch), extra...))
	if err != nil {
		msg := fmt.Sprintf("nvrtc %d.%d: compile %s for %s_%d: %v", l.major, l.minor, name, kind, arch, err)
		if log := trimLog(log); log != "" {
			msg += ":\n" + log
		}
		return nil, "", fmt.Errorf("%s", msg)
	}
	if len(ptx) == 0 {
		return nil, "", fmt.Errorf("nvrtc %d.%d: compile %s for %s_%d: NVRTC returned no PTX", l.major, l.minor, name, kind, arch)
	}
	return ptx, log, nil
}

// trimLog keeps the first maxLog bytes of a compile log, cut at a line's end, and says how much it left out.
func trimLog(log string) string {
	log = strings.TrimRight(log, "\x00 \t\n")
	if len(log) <= maxLog {
		return log
	}
	cut := maxLog
	for cut > 0 && log[cut-1] != '\n' {
		cut--
	}
	if cut == 0 {
		cut = maxLog
	}
	return fmt.Sprintf("%s... (%d more bytes of NVRTC's log)", log[:cut], len(log)-cut)
}
