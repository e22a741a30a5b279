package main

import (
	"os"
	"os/exec"
	"path/filepath"
)

// writeShimFlags gives internal/torch (convrep's own C++ shim) the same flags as gotch's wrappers.
func writeShimFlags(root string, lt *libtorch) error {
	src := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage torch\n\n" +
		cgoHeader(lt, "") + "import \"C\"\n"
	return os.WriteFile(filepath.Join(root, shimFlags), []byte(src), 0o644)
}

// buildOnce compiles gotch's wrappers and the shim into Go's build cache (about two minutes cold on one core).
func buildOnce(root string) error {
	cmd := exec.Command("go", "build", "./internal/torch", gotchModule+"/ts", gotchModule+"/nn")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	println("setup: compiling gotch's C++ wrappers (a few minutes the first time)")
	return cmd.Run()
}
