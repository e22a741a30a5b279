// Package setupcmd is the setup command (cmd/setup, convrep setup). It prepares the build of convrep on this
// machine: it finds (or installs) libtorch, makes a copy of gotch v0.9.1 in third_party/gotch patched for that
// libtorch, and writes the cgo flags of convrep's own C++ shim (internal/torch). go.mod points gotch at the copy with a replace directive.
//
// Why a copy: gotch v0.9.1 is generated against libtorch 2.1 and hard-codes CUDA link flags; Debian's libtorch
// is 1.13.1 (CPU). About a hundred generated wrappers do not compile there; they are found from the compiler's
// own errors and replaced by stubs that report an error when called. The copy also fixes memory faults of
// gotch's generated Go code and makes its tensor handles cheap (see patch.go).
//
// The set-up is idempotent: a stamp records what the copy was made from, and a second run with nothing changed
// returns at once.
//
//	go run ./cmd/setup            # prepare, or do nothing when up to date
//	go run ./cmd/setup -force     # rebuild the copy
//	LIBTORCH=/path/to/libtorch go run ./cmd/setup   # a libtorch folder (include/, lib/), e.g. with CUDA
//	LIBTORCH=python3 go run ./cmd/setup             # the libtorch of the torch this Python imports
//	go run ./cmd/setup bundle --to DIR [--go]       # what a host with no network needs (bundle.go)
//	CONVREP_OFFLINE=DIR go run ./cmd/setup          # the set-up on that host, from the bundle (offline.go)
package setupcmd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	gotchModule  = "github.com/sugarme/gotch"
	gotchVersion = "v0.9.1"
	// patchLevel changes whenever this tool's patches change, so that old copies are rebuilt.
	patchLevel = "convrep-setup-16"
	copyDir    = "third_party/gotch"
	stampFile  = ".convrep-stamp"
	stubList   = "STUBBED.txt"
	shimFlags  = "internal/torch/cgo_flags.go"
)

// options are the set-up's flags.
type options struct{ force, noInstall, build bool }

// parse reads the set-up's command line args (after the command's name); usage and flag errors are printed to
// out. It returns flag.ErrHelp for -h / --help.
func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.BoolVar(&o.force, "force", false, "rebuild the patched gotch copy even when it is up to date")
	fs.BoolVar(&o.noInstall, "no-install", false, "never run apt-get; fail when libtorch is missing")
	fs.BoolVar(&o.build, "build", true, "compile gotch's C++ wrappers and the shim once, so the first test run does not pay for it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./cmd/setup [flags]\n       go run ./cmd/setup bundle --to DIR [--go]\n\n"+
			"Prepares third_party/gotch (gotch %s patched for the libtorch found here) and the cgo flags of\n"+
			"internal/torch. Uses $LIBTORCH when set (a folder with include/ and lib/, e.g. an installed PyTorch's\n"+
			"torch folder, or a Python interpreter such as python3 whose torch is then used), else Debian's\n"+
			"libtorch-dev, installing libtorch-dev and libgloo-dev with apt-get when missing.\n"+
			"With $%s=DIR (a bundle written by `bundle`) it reaches no network.\n\nflags:\n", gotchVersion, offlineEnv)
		fs.PrintDefaults()
	}
	return o, fs.Parse(args)
}

// Main runs the set-up on args, the command line after the command's name, and returns the exit status: 0, 1
// for a failure, 2 for a command line that does not parse.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "bundle" {
		to, withGo, err := parseBundle(args[1:], os.Stderr)
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case err != nil:
			fmt.Fprintln(os.Stderr, "setup bundle:", err)
			return 1
		}
		root, err := repoRoot()
		if err == nil {
			err = writeBundle(root, to, withGo)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "setup bundle:", err)
			return 1
		}
		return 0
	}
	o, err := parse(args, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	}
	if err := run(o.force, o.noInstall, o.build); err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 1
	}
	return 0
}

// Check parses args as Main does and returns what it would reject, without setting anything up.
func Check(args []string) error {
	var err error
	if len(args) > 0 && args[0] == "bundle" {
		_, _, err = parseBundle(args[1:], io.Discard)
	} else {
		_, err = parse(args, io.Discard)
	}
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
	off, err := openOffline(root)
	if err != nil {
		return err
	}
	lt, err := findLibtorch(!noInstall && off == nil)
	if err != nil {
		return err
	}
	if err := ensureNVRTC(lt, !noInstall && off == nil); err != nil {
		return err
	}
	var src string
	if off != nil {
		fmt.Printf("setup: %s\n", off.describe())
		src, err = off.gotchSource(root)
	} else {
		src, err = gotchSource(root)
	}
	if err != nil {
		return err
	}
	stamp := stampOf(lt, src)
	dst := filepath.Join(root, copyDir)
	if !force && upToDate(root, dst, stamp) {
		if off != nil {
			if err := off.vendor(root); err != nil {
				return err
			}
		}
		fmt.Printf("setup: up to date (%s, libtorch %s, CUDA %s, %s) in %s\n", copyDir, lt.Version, yesNo(lt.CUDA), lt.Std, time.Since(start).Round(time.Millisecond))
		return nil
	}
	fmt.Printf("setup: libtorch %s from %s (%s)\n", lt.Version, lt.From, lt.Lib)
	fmt.Printf("setup: copying gotch %s from %s\n", gotchVersion, src)
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := copyTree(src, tmp); err != nil {
		return fmt.Errorf("copy gotch: %w", err)
	}
	if err := patchGo(tmp, lt); err != nil {
		return err
	}
	stubbed, err := stubUncompilable(tmp, lt)
	if err != nil {
		return err
	}
	list := strings.Join(stubbed, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(tmp, stubList), []byte(list), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	if err := writeShimFlags(root, lt); err != nil {
		return err
	}
	if err := writeNVRTCFlags(root, lt); err != nil {
		return err
	}
	fmt.Println("setup:", lt.report())
	if off != nil {
		if err := off.vendor(root); err != nil {
			return err
		}
	}
	fmt.Printf("setup: stubbed %d wrappers that libtorch %s cannot compile (listed in %s/%s)\n",
		len(stubbed), lt.Version, copyDir, stubList)
	if build {
		if err := buildOnce(root); err != nil {
			return err
		}
		if lt.CUDA {
			if err := checkCUDABuild(root); err != nil {
				return err
			}
		}
	}
	// The stamp is written last: an interrupted set-up is redone, never trusted.
	if err := os.WriteFile(filepath.Join(dst, stampFile), []byte(stamp), 0o644); err != nil {
		return err
	}
	fmt.Printf("setup: done in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// stampOf names everything the copy depends on: this tool's patches, gotch's source and the libtorch files.
func stampOf(lt *libtorch, src string) string {
	h := sha256.New()
	fmt.Fprintln(h, patchLevel, gotchVersion, src, lt.Include, lt.Lib, lt.Version, lt.CUDA, lt.ABI, lt.Std)
	// The shim's NCCL and CUDA headers are found through these (shim.go).
	fmt.Fprintln(h, os.Getenv("CGO_CPPFLAGS"), os.Getenv("CUDA_HOME"))
	// The CUDA libraries the shim links are the files the loader resolves (cudalibs.go).
	fmt.Fprintln(h, os.Getenv("LD_LIBRARY_PATH"), lt.CUDALibs)
	if lt.NVRTCDir != "" { // absent before NVRTC, so that the stamps of other builds stay as they were
		fmt.Fprintln(h, "nvrtc", lt.NVRTCDir)
	}
	for _, f := range []string{"libtorch.so", "libtorch_cpu.so", "libc10.so"} {
		if st, err := os.Stat(filepath.Join(lt.Lib, f)); err == nil {
			fmt.Fprintln(h, f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func upToDate(root, dst, stamp string) bool {
	b, err := os.ReadFile(filepath.Join(dst, stampFile))
	if err != nil || string(b) != stamp {
		return false
	}
	_, err = os.Stat(filepath.Join(root, shimFlags))
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

// report is the set-up's one line on what it builds against.
func (lt *libtorch) report() string {
	s := fmt.Sprintf("CUDA %s", yesNo(lt.CUDA))
	if n := lt.NCCL; n != nil {
		lib := n.Lib
		if n.LibIsLibtorch {
			lib += ", linked in"
		}
		s += fmt.Sprintf(", NCCL %s (library %s; header %s, NCCL %s)", n.LibV, lib, n.Header, n.HeaderV)
	} else if lt.CUDA {
		s += ", NCCL none"
	}
	for _, l := range lt.CUDALibs {
		s += fmt.Sprintf(", links %s", l.Path)
	}
	if lt.NVRTCDir != "" {
		s += fmt.Sprintf(", NVRTC from %s (run path)", lt.NVRTCDir)
	}
	return s + fmt.Sprintf(", C++ standard %s, C++11 ABI %d", lt.Std, lt.ABI)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
