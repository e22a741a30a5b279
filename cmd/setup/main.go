// Command setup prepares the build of convrep on this machine: libtorch, the patched copy of gotch in
// third_party/gotch and the cgo flags of internal/torch (convrep setup does the same; see
// cmd/internal/setupcmd). It does not use gotch itself, so that it runs before gotch is prepared.
//
//	go run ./cmd/setup            # prepare, or do nothing when up to date
//	go run ./cmd/setup -force     # rebuild the copy
//	go run ./cmd/setup bundle --to DIR [--go]
package main

import (
	"os"

	"convrep/cmd/internal/setupcmd"
)

func main() { os.Exit(setupcmd.Main(os.Args[1:])) }
