package libtorch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The shim's CUDA code (internal/torch under CONVREP_CUDA: CUDA graphs, the fused kernels' ops, NCCL) and its
// branches for libtorch 2.x compile only against a CUDA libtorch 2.x, which a CPU machine does not have: before
// 2026-11-28 such code first compiled on a lent GPU (on 2026-11-27 a clash with cuda.h's names cost that GPU a
// call). Debian's next release (trixie) packages libtorch 2.6 built with CUDA 12.4; the headers of that build
// and of CUDA, NCCL and Gloo are enough for g++ to type-check the shim on any machine. On a CPU machine the
// set-up fetches them once, with apt-get into a folder of its own (the system's apt sources and packages stay
// as they are), keeps only usr/include, and internal/torch's TestCUDAShimCompilesOnLibtorch2 compiles the
// whole shim against them in make test.

// cudaHeaderSuite is the Debian release whose packages the headers come from.
const cudaHeaderSuite = "trixie"

// cudaHeaderPackages are the packages whose usr/include the check needs: libtorch with its CUDA headers
// (ATen/cuda, c10/cuda), CUDA's (the runtime, cuBLAS and the rest ATen/cuda includes), libcu++'s nv/target
// (which cuda_fp16.h includes), NCCL's and Gloo's (c10d's backends).
var cudaHeaderPackages = []string{"libtorch-cuda-dev", "nvidia-cuda-dev", "libcu++-dev", "libnccl-dev", "libgloo-dev"}

// cudaHeaderMarker is the header that tells an include folder of a CUDA libtorch.
const cudaHeaderMarker = "ATen/cuda/CUDAContext.h"

// cudaHeaderStamp, in the headers' folder, lists the packages they came from ("name version" lines); it is
// written last, so the folder is complete when it exists.
const cudaHeaderStamp = "PACKAGES"

// debianKeyring verifies the release's signed package lists.
var debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// cudaHeaderFacts are what planCUDAHeaders decides from.
type cudaHeaderFacts struct {
	CUDA    bool   // the libtorch found is a CUDA build: the build compiles the shim's CUDA code itself
	NoPlace string // why there is nowhere to keep them (no cache folder); "" when there is
	Forced  string // $CONVREP_CUDA_HEADERS
	Have    bool   // the headers are there already (cudaHeaderPlace.complete)
	Install bool   // the set-up may download (no --no-install, no offline bundle)
	Tools   string // what is missing of apt-get, dpkg-deb, tar and Debian's archive keyring; "" for nothing
}

// planCUDAHeaders says whether the set-up fetches the headers (true) and what it prints (a note, or "").
// Nothing here fails the set-up, which serves `make demo` too: the test that needs the headers fails instead,
// saying what to do.
func planCUDAHeaders(f cudaHeaderFacts) (fetch bool, note string) {
	const test = "internal/torch's TestCUDAShimCompilesOnLibtorch2 fails until they are there"
	switch {
	case f.CUDA:
		return false, ""
	case f.NoPlace != "":
		return false, fmt.Sprintf("%s: %s; set CONVREP_CUDA_HEADERS to a folder holding them", f.NoPlace, test)
	case f.Forced != "" && !f.Have:
		return false, fmt.Sprintf("CONVREP_CUDA_HEADERS=%s holds no %s: %s", f.Forced, cudaHeaderMarker, test)
	case f.Have:
		return false, ""
	case !f.Install:
		return false, fmt.Sprintf("not fetching the CUDA libtorch headers that type-check the shim's GPU code here (offline or --no-install): %s; set CONVREP_CUDA_HEADERS to a folder holding them", test)
	case f.Tools != "":
		return false, fmt.Sprintf("cannot fetch the CUDA libtorch headers that type-check the shim's GPU code: no %s; %s", f.Tools, test)
	}
	return true, ""
}

// cudaHeaderPlace is where the headers are looked for: $CONVREP_CUDA_HEADERS (forced), else the set-up's folder
// in the user's cache, shared by every clone; complete says they are there (a forced folder holds
// cudaHeaderMarker, the set-up's its stamp).
type cudaHeaderPlace struct {
	dir              string
	forced, complete bool
}

func cudaHeaderLocation() (cudaHeaderPlace, error) {
	if dir := os.Getenv("CONVREP_CUDA_HEADERS"); dir != "" {
		return cudaHeaderPlace{dir: dir, forced: true, complete: exists(filepath.Join(dir, cudaHeaderMarker))}, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return cudaHeaderPlace{}, fmt.Errorf("no cache folder for the CUDA libtorch headers: %w", err)
	}
	dir := filepath.Join(cache, "convrep", "cuda-headers-"+cudaHeaderSuite)
	return cudaHeaderPlace{dir: dir, complete: exists(filepath.Join(dir, cudaHeaderStamp))}, nil
}

// CUDAHeaders is the include folder of a CUDA libtorch 2.x with CUDA's, NCCL's and Gloo's headers beside it
// (cudaHeaderLocation), and the NCCL_VERSION_CODE of its nccl.h, which the shim's NCCL check wants as
// CONVREP_NCCL_LIB_VERSION_CODE. The error says what to do when there is none.
func CUDAHeaders() (dir string, ncclCode int, err error) {
	at, err := cudaHeaderLocation()
	switch {
	case err != nil:
		return "", 0, err
	case at.forced && !at.complete:
		return "", 0, fmt.Errorf("CONVREP_CUDA_HEADERS=%s holds no %s", at.dir, cudaHeaderMarker)
	case !at.complete:
		return "", 0, fmt.Errorf("no CUDA libtorch headers in %s: run make setup where Debian's mirror is reachable (it fetches %s's %s), or set CONVREP_CUDA_HEADERS to an include folder holding a CUDA libtorch 2.x with CUDA's, NCCL's and Gloo's headers",
			at.dir, cudaHeaderSuite, strings.Join(cudaHeaderPackages, ", "))
	}
	v, err := ncclHeaderVersion(filepath.Join(at.dir, "nccl.h"))
	if err != nil {
		return "", 0, err
	}
	return at.dir, v.code(), nil
}

// EnsureCUDAHeaders carries out planCUDAHeaders on this machine. It never fails the set-up: what goes wrong is
// printed, and the test that needs the headers fails, saying what to do.
func EnsureCUDAHeaders(lt *Libtorch, install bool) {
	at, err := cudaHeaderLocation()
	f := cudaHeaderFacts{CUDA: lt.CUDA, Have: at.complete, Install: install}
	if err != nil {
		f.NoPlace = err.Error()
	}
	if at.forced {
		f.Forced = at.dir
	}
	var missing []string
	for _, tool := range []string{"apt-get", "dpkg-deb", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if !exists(debianKeyring) {
		missing = append(missing, debianKeyring)
	}
	f.Tools = strings.Join(missing, ", ")
	fetch, note := planCUDAHeaders(f)
	if note != "" {
		fmt.Println("setup:", note)
	}
	if !fetch {
		return
	}
	fmt.Printf("setup: fetching the headers of Debian %s's CUDA build of libtorch (%s; about 1 GB of packages, 70 MB kept in %s) so that make test type-checks the shim's GPU code\n",
		cudaHeaderSuite, strings.Join(cudaHeaderPackages, ", "), at.dir)
	if err := fetchCUDAHeaders(at.dir); err != nil {
		fmt.Printf("setup: could not fetch the CUDA libtorch headers (%v): internal/torch's TestCUDAShimCompilesOnLibtorch2 fails until they are there\n", err)
	}
}

// fetchCUDAHeaders downloads cudaHeaderPackages with apt-get (its lists, cache and sources in a folder of their
// own, the lists verified with Debian's archive keyring) and unpacks their usr/include into dir, each package
// deleted once unpacked. It works in a temporary folder beside dir and renames the result into place last.
func fetchCUDAHeaders(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	apt := filepath.Join(work, "apt")
	debs := filepath.Join(work, "debs")
	root := filepath.Join(work, "root")
	for _, d := range []string{filepath.Join(apt, "lists", "partial"), filepath.Join(apt, "cache", "archives", "partial"), debs, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	sources := filepath.Join(apt, "convrep-cuda-headers.sources")
	if err := os.WriteFile(sources, []byte(cudaHeaderSources()), 0o644); err != nil {
		return err
	}
	aptGet := func(dir string, args ...string) error {
		args = append(aptOptions(apt, sources), args...)
		if _, err := tee(dir, "apt-get", args...); err != nil {
			return fmt.Errorf("apt-get %s: %w", strings.Join(args, " "), err)
		}
		return nil
	}
	if err := aptGet(work, "update"); err != nil {
		return err
	}
	if err := aptGet(debs, append([]string{"download"}, cudaHeaderPackages...)...); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(debs, "*.deb"))
	if err != nil {
		return err
	}
	if len(files) != len(cudaHeaderPackages) {
		return fmt.Errorf("apt-get download gave %d packages for %d", len(files), len(cudaHeaderPackages))
	}
	var stamp strings.Builder
	for _, deb := range files {
		fields, err := exec.Command("dpkg-deb", "--show", "--showformat=${Package} ${Version}\n", deb).Output()
		if err != nil {
			return fmt.Errorf("dpkg-deb --show %s: %w", deb, err)
		}
		stamp.Write(fields)
		// GNU tar refuses members that climb out of root (".."), so a package writes nowhere else.
		unpack := exec.Command("sh", "-c", `dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --wildcards './usr/include/*'`, "sh", deb, root)
		if out, err := unpack.CombinedOutput(); err != nil {
			return fmt.Errorf("unpack %s: %v: %s", filepath.Base(deb), err, out)
		}
		if err := os.Remove(deb); err != nil {
			return err
		}
	}
	include := filepath.Join(root, "usr", "include")
	if !exists(filepath.Join(include, cudaHeaderMarker)) || !exists(filepath.Join(include, "cuda_runtime_api.h")) || !exists(filepath.Join(include, "nccl.h")) {
		return fmt.Errorf("the packages hold no %s, cuda_runtime_api.h or nccl.h", cudaHeaderMarker)
	}
	if err := os.WriteFile(filepath.Join(include, cudaHeaderStamp), []byte(stamp.String()), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(include, dir)
}

// cudaHeaderSources is the deb822 sources file of cudaHeaderSuite's components that hold the packages.
func cudaHeaderSources() string {
	return "# Written by convrep's set-up for its own apt-get runs (never the system's): the headers of a CUDA libtorch.\n" +
		"Types: deb\nURIs: http://deb.debian.org/debian\nSuites: " + cudaHeaderSuite + "\nComponents: main contrib non-free\n" +
		"Signed-By: " + debianKeyring + "\n"
}

// aptOptions point apt-get at sources alone, and at lists and a cache under dir, for this machine's architecture.
func aptOptions(dir, sources string) []string {
	opts := []string{"-q",
		"-o", "Dir::Etc::SourceList=" + sources,
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(dir, "sources.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "APT::Architectures::=" + runtime.GOARCH, // Debian's names for amd64 and arm64 are Go's
	}
	if os.Geteuid() == 0 {
		// apt drops to its _apt user to download, which cannot write to this folder; as root it would say so.
		opts = append(opts, "-o", "APT::Sandbox::User=root")
	}
	return opts
}
