// Package setupcmd is the setup command (cmd/setup, convrep setup). It prepares the build of convrep on this
// machine: it finds (or installs) libtorch, makes a copy of gotch v0.9.1 in third_party/gotch patched for that
// libtorch, and writes the cgo flags of convrep's own C++ shim (internal/torch). go.mod points gotch at the copy with a replace directive.
//
// Why a copy: gotch v0.9.1 is generated against libtorch 2.1 and hard-codes CUDA link flags; Debian's libtorch
// is 1.13.1 (CPU). About a hundred generated wrappers do not compile there; they are found from the compiler's
// own errors and replaced by stubs that report an error when called. The copy also fixes memory faults of
// gotch's generated Go code and makes its tensor handles cheap (internal/build/gotchpatch).
//
// The set-up is idempotent: a stamp records what the copy was made from, and a second run with nothing changed
// returns at once.
//
//	go run ./cmd/setup            # prepare, or do nothing when up to date
//	go run ./cmd/setup -force     # rebuild the copy
//	LIBTORCH=/path/to/libtorch go run ./cmd/setup   # a libtorch folder (include/, lib/), e.g. with CUDA
//	LIBTORCH=python3 go run ./cmd/setup             # the libtorch of the torch this Python imports
//	go run ./cmd/setup bundle --to DIR [--go]       # what a host with no network needs (internal/build/offline)
//	CONVREP_OFFLINE=DIR go run ./cmd/setup          # the set-up on that host, from the bundle (internal/build/offline)
//
// This package parses the command line and runs the steps in order; the steps live in internal/build/libtorch
// (finding libtorch, the shim's flags), internal/build/gotchpatch (the patched copy) and internal/build/offline (the bundle).
package setupcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"convrep/internal/build/gotchpatch"
	"convrep/internal/build/libtorch"
	"convrep/internal/build/offline"
)

// Options are the set-up's command line: its flags, or bundle's.
type Options struct {
	force, noInstall, build bool
	bundle                  bool   // setup bundle: write what a host with no network needs, and nothing else
	to                      string // bundle's folder
	withGo                  bool   // bundle the Go toolchain too
}

// The set-up has the shape of every convrep command (internal/cli's Command: Parse, then Run), but cmd/setup
// cannot import internal/cli: it runs before the modules are unpacked, so it imports the standard library only
// (imports_test.go). Main and Check below are that skeleton for cmd/setup; convrep's `setup` wraps Parse and Run
// in a cli.Command.

// Name is the command a command line args (after "setup") runs, as failures name it: "setup" or "setup bundle".
func Name(args []string) string {
	if len(args) > 0 && args[0] == "bundle" {
		return "setup bundle"
	}
	return "setup"
}

// Parse reads the set-up's command line args (after the command's name): its flags, or bundle and bundle's
// flags. Usage and flag errors are printed to stderr. It returns flag.ErrHelp for -h / --help.
func Parse(args []string, stderr io.Writer) (Options, error) {
	if len(args) > 0 && args[0] == "bundle" {
		return parseBundle(args[1:], stderr)
	}
	var o Options
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.force, "force", false, "rebuild the patched gotch copy even when it is up to date")
	fs.BoolVar(&o.noInstall, "no-install", false, "never run apt-get; fail when libtorch is missing")
	fs.BoolVar(&o.build, "build", true, "compile gotch's C++ wrappers and the shim once, so the first test run does not pay for it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./cmd/setup [flags]\n       go run ./cmd/setup bundle --to DIR [--go]\n\n"+
			"Prepares third_party/gotch (gotch %s patched for the libtorch found here) and the cgo flags of\n"+
			"internal/torch. Uses $LIBTORCH when set (a folder with include/ and lib/, e.g. an installed PyTorch's\n"+
			"torch folder, or a Python interpreter such as python3 whose torch is then used), else Debian's\n"+
			"libtorch-dev, installing libtorch-dev, libgloo-dev, libopenblas0-pthread and libdnnl-dev with apt-get\n"+
			"when missing.\n"+
			"With $%s=DIR (a bundle written by `bundle`) it reaches no network.\n\nflags:\n", gotchpatch.Version, offline.Env)
		fs.PrintDefaults()
	}
	return o, fs.Parse(args)
}

// parseBundle reads the command line of setup bundle (after "bundle"); usage and flag errors are printed to
// stderr. It returns flag.ErrHelp for -h / --help.
func parseBundle(args []string, stderr io.Writer) (Options, error) {
	o := Options{bundle: true}
	fl := flag.NewFlagSet("bundle", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&o.to, "to", "", "the folder to write the bundle into (created; its bundle files are replaced)")
	fl.BoolVar(&o.withGo, "go", false, "also pack this Go toolchain ("+offline.GoFile+", needs the xz program): for hosts without Go "+runtime.Version())
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: go run ./cmd/setup bundle --to DIR [--go]\n\n"+
			"Writes what a host with no network needs to build convrep from a clone: the vendored Go modules (%s),\n"+
			"gotch %s's source (%s) and, with --go, the Go toolchain (%s). On that host:\n"+
			"  CONVREP_OFFLINE=DIR make setup      (then make test, make demo, go build ./cmd/...)\n\nflags:\n",
			offline.VendorFile, gotchpatch.Version, offline.GotchFile, offline.GoFile)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return o, err
	}
	if o.to == "" || fl.NArg() > 0 {
		fl.Usage()
		err := errors.New("bundle needs --to DIR and no other arguments")
		fmt.Fprintf(stderr, "setup bundle: %v\n", err)
		return o, err
	}
	return o, nil
}

// Run sets up (or writes the bundle) as o says.
func Run(_ context.Context, o Options) error {
	if !o.bundle {
		return run(o.force, o.noInstall, o.build)
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	return offline.Write(root, o.to, o.withGo)
}

// Main runs the set-up on args, the command line after the command's name, and returns the exit status: 0, 1
// for a failure, 2 for a command line that does not parse (0 for --help).
func Main(args []string) int {
	o, err := Parse(args, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	if err := Run(context.Background(), o); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Name(args), err)
		return 1
	}
	return 0
}

// Check parses args as Main does and returns what it would reject, without setting anything up.
func Check(args []string) error {
	_, err := Parse(args, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func run(force, noInstall, build bool) error {
	start := time.Now()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	off, err := offline.Open(root)
	if err != nil {
		return err
	}
	lt, err := libtorch.Find(!noInstall && off == nil)
	if err != nil {
		return err
	}
	if err := libtorch.EnsureNVRTC(lt, !noInstall && off == nil); err != nil {
		return err
	}
	libtorch.EnsureCUDAHeaders(lt, !noInstall && off == nil)
	var src string
	if off != nil {
		fmt.Printf("setup: %s\n", off.Describe())
		src, err = off.GotchSource(root)
	} else {
		src, err = gotchpatch.Source(root)
	}
	if err != nil {
		return err
	}
	stamp := gotchpatch.Stamp(lt, src)
	dst := filepath.Join(root, gotchpatch.Dir)
	if !force && gotchpatch.UpToDate(dst, stamp) && exists(filepath.Join(root, libtorch.ShimFlags)) {
		if off != nil {
			if err := off.Vendor(root); err != nil {
				return err
			}
		}
		cuda := map[bool]string{true: "yes", false: "no"}[lt.CUDA]
		fmt.Printf("setup: up to date (%s, libtorch %s, CUDA %s, %s) in %s\n", gotchpatch.Dir, lt.Version, cuda, lt.Std, time.Since(start).Round(time.Millisecond))
		return nil
	}
	fmt.Printf("setup: libtorch %s from %s (%s)\n", lt.Version, lt.From, lt.Lib)
	fmt.Printf("setup: copying gotch %s from %s\n", gotchpatch.Version, src)
	stubbed, err := gotchpatch.Make(src, dst, lt)
	if err != nil {
		return err
	}
	if err := libtorch.WriteShimFlags(root, lt); err != nil {
		return err
	}
	if err := libtorch.WriteNVRTCFlags(root, lt); err != nil {
		return err
	}
	fmt.Println("setup:", lt.Report())
	if off != nil {
		if err := off.Vendor(root); err != nil {
			return err
		}
	}
	fmt.Printf("setup: stubbed %d wrappers that libtorch %s cannot compile (listed in %s/%s)\n",
		len(stubbed), lt.Version, gotchpatch.Dir, gotchpatch.StubList)
	if build {
		if err := gotchpatch.BuildOnce(root); err != nil {
			return err
		}
		if lt.CUDA {
			if err := libtorch.CheckCUDABuild(root); err != nil {
				return err
			}
		}
	}
	// The stamp is written last: an interrupted set-up is redone, never trusted.
	if err := gotchpatch.WriteStamp(dst, stamp); err != nil {
		return err
	}
	fmt.Printf("setup: done in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// repoRoot is the folder holding convrep's go.mod, found upwards from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module convrep\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no convrep go.mod above the working directory; run from the repository")
		}
		dir = parent
	}
}
