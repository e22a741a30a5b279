package setupcmd

import (
	"strings"
	"testing"
)

// TestDockerfileNCCLByConstruction: the image's NCCL header is the wheel's, the release of the libnccl.so.2
// libtorch loads, so the set-up's check (internal/build/libtorch/nccl.go) holds by construction: no NCCL is installed from the
// distribution beside it, no CGO_CPPFLAGS puts another include folder first, the wheel's nccl.h is checked to
// be there, and the build stops unless the set-up wrote the library's release into the shim's flags.
func TestDockerfileNCCLByConstruction(t *testing.T) {
	d := loadDockerfile(t)
	for _, in := range d.all {
		if in.Cmd == "RUN" && (strings.Contains(in.Args, "libnccl2") || strings.Contains(in.Args, "libnccl-dev")) {
			t.Errorf("line %d installs the distribution's NCCL: the wheel's is the one libtorch loads", in.Line)
		}
		if in.Cmd == "ENV" && strings.Contains(in.Args, "CGO_CPPFLAGS") {
			t.Errorf("line %d sets CGO_CPPFLAGS, whose -I folders are searched before the wheel's", in.Line)
		}
	}
	var header, checked bool
	for _, in := range d.runs(d.build) {
		header = header || strings.Contains(in.Args, `test -f "$SITE/nvidia/nccl/include/nccl.h"`)
		if strings.Contains(in.Args, "go run ./cmd/setup") {
			checked = strings.Contains(in.Args, "grep -q -- '-DCONVREP_NCCL_LIB_VERSION_CODE=' internal/torch/cgo_flags.go")
		}
	}
	if !header {
		t.Error("no RUN checks that the wheel carries nvidia/nccl/include/nccl.h")
	}
	if !checked {
		t.Error("the set-up's RUN does not check that cgo_flags.go names the NCCL release libtorch loads")
	}
}
