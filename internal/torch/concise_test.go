package torch

import "testing"

// libtorch's messages lose their C++ frames, whichever way they carry them; a message without frames stays.
func TestConcise(t *testing.T) {
	for in, want := range map[string]string{
		"[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 16777216 bytes. Error code 12 (Cannot allocate memory)\nframe #0: <unknown function> + 0x4c062 (0x7f in libc10.so)\nframe #1: c10::ThrowEnforceNotMet": "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 16777216 bytes. Error code 12 (Cannot allocate memory)",
		"Expected all tensors to be on the same device\nException raised from check at x.cpp:1 (most recent call first):\nframe #0: f":                                                                                                                                         "Expected all tensors to be on the same device",
		"CUDA graph: entered twice\n": "CUDA graph: entered twice",
	} {
		if got := concise(in); got != want {
			t.Errorf("concise(%q) = %q, want %q", in, got, want)
		}
	}
}
