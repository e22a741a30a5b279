package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ncclPin is NVIDIA's Ubuntu package version of an NCCL release for a CUDA release: 2.18.1-1+cuda12.1.
var ncclPin = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)-\d+\+cuda(\d+\.\d+)$`)

// TestDockerfileNCCLPin: the image installs the NCCL libtorch 2.1.0+cu121 was built with (2.18.1), for the
// image's CUDA release, in both stages, before the set-up compiles the shim; and the pin is a release that
// internal/torch/nccl_check.h accepts, so the two cannot drift apart.
func TestDockerfileNCCLPin(t *testing.T) {
	d := loadDockerfile(t)
	var pin string
	for _, in := range d.global {
		if k, v, ok := strings.Cut(in.Args, "="); in.Cmd == "ARG" && ok && k == "NCCL_VERSION" {
			pin = v
		}
	}
	m := ncclPin.FindStringSubmatch(pin)
	if m == nil {
		t.Fatalf("global ARG NCCL_VERSION=%q, want NVIDIA's package version such as 2.18.1-1+cuda12.1", pin)
	}
	if got := m[1] + "." + m[2] + "." + m[3]; got != "2.18.1" {
		t.Errorf("NCCL_VERSION %s pins NCCL %s; libtorch 2.1.0+cu121 was built with 2.18.1", pin, got)
	}
	if img := cudaImage.FindStringSubmatch(d.build.Image); img == nil || !strings.HasPrefix(img[1], m[4]+".") {
		t.Errorf("NCCL_VERSION %s is built for CUDA %s, the build image is %s", pin, m[4], d.build.Image)
	}

	installs := func(s stage, pkgs ...string) (line int) {
		for _, in := range d.runs(s) {
			ok := strings.Contains(in.Args, "--allow-change-held-packages") // the CUDA images hold their NCCL
			for _, p := range pkgs {
				ok = ok && strings.Contains(in.Args, `"`+p+`=${NCCL_VERSION}"`)
			}
			if ok {
				return in.Line
			}
		}
		return 0
	}
	declared := func(s stage) bool {
		for _, in := range s.Body {
			if in.Cmd == "ARG" && in.Args == "NCCL_VERSION" {
				return true
			}
		}
		return false
	}
	for _, s := range []stage{d.build, d.final} {
		if !declared(s) {
			t.Errorf("stage %s does not declare ARG NCCL_VERSION (a global ARG is not seen inside a stage without it)", s.Image)
		}
	}
	pinned := installs(d.build, "libnccl2", "libnccl-dev")
	if pinned == 0 {
		t.Fatal(`no RUN of the build stage installs "libnccl2=${NCCL_VERSION}" and "libnccl-dev=${NCCL_VERSION}" with --allow-change-held-packages`)
	}
	if installs(d.final, "libnccl2") == 0 {
		t.Error(`no RUN of the runtime stage installs "libnccl2=${NCCL_VERSION}" with --allow-change-held-packages`)
	}
	for _, in := range d.runs(d.build) {
		if strings.Contains(in.Args, "go run ./cmd/setup") && in.Line < pinned {
			t.Errorf("line %d: the set-up runs before NCCL is pinned (line %d)", in.Line, pinned)
		}
	}
	for _, in := range d.runs(d.build) {
		if in.Line == pinned && !strings.Contains(in.Args, "#define NCCL_MINOR "+m[2]+"$") {
			t.Errorf("line %d: the pin is not checked against /usr/include/nccl.h's NCCL_MINOR %s", in.Line, m[2])
		}
	}

	check, err := os.ReadFile(filepath.Join(d.root, "internal/torch/nccl_check.h"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := regexp.MustCompile(`NCCL_VERSION_CODE < NCCL_VERSION\((\d+), (\d+), 0\)`).FindSubmatch(check)
	switch {
	case accepted == nil:
		t.Error("nccl_check.h has no NCCL_VERSION_CODE < NCCL_VERSION(major, minor, 0) bound")
	case string(accepted[1]) != m[1] || string(accepted[2]) != m[2]:
		t.Errorf("nccl_check.h accepts NCCL %s.%s, the Dockerfile pins %s", accepted[1], accepted[2], pin)
	}
}
