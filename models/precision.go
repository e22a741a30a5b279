package models

import (
	"fmt"
	"os"
	"strings"

	"github.com/sugarme/gotch"

	"convrep/internal/torch"
)

// Precision is the arithmetic an Embedder's forward pass runs in.
type Precision string

const (
	// FP32 runs every op in float32.
	FP32 Precision = "fp32"
	// BF16 runs the forward pass under libtorch's autocast with bfloat16 (CPU or CUDA).
	BF16 Precision = "bf16"
)

// cpuinfo is where Linux lists the CPU's instruction-set flags.
const cpuinfo = "/proc/cpuinfo"

// ParsePrecision reads a --precision flag for inference on dev. "" is fp32. bf16 runs on CUDA, and on a CPU
// with bf16 instructions (avx512_bf16 or AMX); elsewhere it is refused with the reason, since emulated bf16
// is slower than fp32. Describe says what the chosen one runs on, for the caller's start-up log.
func ParsePrecision(s string, dev gotch.Device) (Precision, error) {
	switch Precision(s) {
	case "", FP32:
		return FP32, nil
	case BF16:
		if _, err := bf16On(dev); err != nil {
			return "", fmt.Errorf("--precision bf16 on %v: %w", dev, err)
		}
		return BF16, nil
	}
	return "", fmt.Errorf("--precision %q: fp32 or bf16", s)
}

// Describe says how an Embedder on dev runs p, for a start-up log line.
func (p Precision) Describe(dev gotch.Device) string {
	if p != BF16 {
		if dev.IsCuda() {
			return "fp32"
		}
		return "fp32, the layers' linears by oneDNN on weights packed for it once"
	}
	why, err := bf16On(dev)
	if err != nil {
		return "bf16 (" + err.Error() + ")"
	}
	return why
}

// bf16On says what runs bf16 on dev, or why it cannot run there fast.
func bf16On(dev gotch.Device) (string, error) {
	if dev.IsCuda() {
		return "bf16 under libtorch's CUDA autocast", nil
	}
	info, err := os.ReadFile(cpuinfo)
	if err != nil {
		return "", fmt.Errorf("cannot read the CPU's flags: %w", err)
	}
	flag, ok := bf16Flag(string(info))
	if !ok {
		return "", fmt.Errorf("this CPU has neither avx512_bf16 nor AMX (%s lists no bf16 instructions), so bf16 would be slower than fp32; use fp32", cpuinfo)
	}
	if torch.MKLDNNDirect() {
		return fmt.Sprintf("bf16 under libtorch's CPU autocast (the CPU has %s), the layers' linears by oneDNN on weights packed in bf16 once", flag), nil
	}
	return fmt.Sprintf("bf16 under libtorch's CPU autocast (the CPU has %s)", flag), nil
}

// bf16Flag returns the first bf16 instruction set that /proc/cpuinfo's text lists in a "flags" line:
// avx512_bf16, or amx_bf16 (AMX), which CPU autocast's oneDNN kernels use.
func bf16Flag(info string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		name, flags, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		for _, want := range []string{"avx512_bf16", "amx_bf16"} {
			for _, f := range strings.Fields(flags) {
				if f == want {
					return want, true
				}
			}
		}
	}
	return "", false
}
