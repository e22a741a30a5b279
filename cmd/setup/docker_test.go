package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository's Dockerfile cannot be built here (no Docker engine): these tests check what it says against
// the repository it builds from.

type dockerfile struct {
	root   string
	global []instruction
	build  stage
	final  stage
	all    []instruction
}

func loadDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	global, st, err := stages(ins)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(st) != 2 {
		t.Fatalf("Dockerfile has %d stages, want 2 (build, runtime)", len(st))
	}
	return &dockerfile{root: root, global: global, build: st[0], final: st[1], all: ins}
}

func (d *dockerfile) runs(s stage) []instruction {
	var out []instruction
	for _, in := range s.Body {
		if in.Cmd == "RUN" {
			out = append(out, in)
		}
	}
	return out
}

// arg is the default of ARG name in stage s.
func arg(s stage, name string) (string, bool) {
	for _, in := range s.Body {
		if in.Cmd == "ARG" {
			if k, v, ok := strings.Cut(in.Args, "="); ok && k == name {
				return v, true
			}
		}
	}
	return "", false
}

var cudaImage = regexp.MustCompile(`^nvidia/cuda:(12\.\d+\.\d+)-(?:cudnn\d*-)?(devel|runtime)-(ubuntu\d+\.\d+)$`)

func TestDockerfileStages(t *testing.T) {
	d := loadDockerfile(t)
	b := cudaImage.FindStringSubmatch(d.build.Image)
	f := cudaImage.FindStringSubmatch(d.final.Image)
	if b == nil || b[2] != "devel" {
		t.Errorf("build stage FROM %s, want a CUDA 12.x devel image", d.build.Image)
	}
	if f == nil || f[2] != "runtime" {
		t.Errorf("final stage FROM %s, want a CUDA 12.x runtime image", d.final.Image)
	}
	if b != nil && f != nil && (b[1] != f[1] || b[3] != f[3]) {
		t.Errorf("build (%s) and runtime (%s) images differ in CUDA or distribution: the binaries link the build's glibc", d.build.Image, d.final.Image)
	}
	if d.build.Name == "" {
		t.Fatal("the build stage has no name for COPY --from")
	}
	for _, in := range d.final.Body {
		if in.Cmd == "COPY" && in.flag("from") != "" && in.flag("from") != d.build.Name {
			t.Errorf("line %d: COPY --from=%s, not the build stage %s", in.Line, in.flag("from"), d.build.Name)
		}
	}
}

func TestDockerfileLibtorch(t *testing.T) {
	d := loadDockerfile(t)
	url, ok := arg(d.build, "LIBTORCH_URL")
	if !ok {
		t.Fatal("no ARG LIBTORCH_URL in the build stage")
	}
	// The official file name: C++11 ABI, shared with its CUDA dependencies, 2.1.0 built for CUDA 12.1.
	want := regexp.MustCompile(`^https://download\.pytorch\.org/libtorch/cu121/libtorch-cxx11-abi-shared-with-deps-2\.1\.0%2Bcu121\.zip$`)
	if !want.MatchString(url) {
		t.Errorf("LIBTORCH_URL = %s, want libtorch 2.1.0+cu121 with the cxx11 ABI", url)
	}
	var fetched, unzipped, setup, gloo bool
	for _, in := range d.runs(d.build) {
		a := in.Args
		if strings.Contains(a, `"$LIBTORCH_URL"`) {
			fetched = true
			unzipped = strings.Contains(a, "unzip -q /tmp/libtorch.zip -d /opt")
		}
		if strings.Contains(a, "LIBTORCH=/opt/libtorch go run ./cmd/setup") {
			setup = true
			if !strings.Contains(a, "--no-install") {
				t.Errorf("line %d: the set-up runs without --no-install: it would fall back to apt-get", in.Line)
			}
		}
		if strings.Contains(a, "third_party/gloo") && strings.Contains(a, "/opt/libtorch/include/gloo/config.h") {
			gloo = true
		}
	}
	if !fetched || !unzipped {
		t.Errorf("no RUN downloads $LIBTORCH_URL and unzips it into /opt (the zip holds libtorch/)")
	}
	if !setup {
		t.Errorf("no RUN runs the set-up tool with LIBTORCH=/opt/libtorch")
	}
	if !gloo {
		t.Errorf("no RUN provides /opt/libtorch/include/gloo/config.h from PyTorch's pinned third_party/gloo")
	}
	// c10d's NCCL headers include cuda_runtime_api.h, which cgo must find.
	if !envHas(d.build, "CGO_CPPFLAGS", "-I/usr/local/cuda/include") {
		t.Errorf("the build stage does not put CUDA's include folder in CGO_CPPFLAGS")
	}
	// The binaries' rpath is the lib folder the set-up saw: the runtime keeps the same path.
	if !hasCopy(d.final, d.build.Name, "/opt/libtorch/lib", "/opt/libtorch/lib") {
		t.Errorf("the runtime stage does not COPY --from=%s /opt/libtorch/lib to the same path", d.build.Name)
	}
}

func envHas(s stage, key, want string) bool {
	for _, in := range s.Body {
		if in.Cmd == "ENV" && (strings.Contains(in.Args, key+"="+want) || strings.Contains(in.Args, key+`="`+want)) {
			return true
		}
	}
	return false
}

func hasCopy(s stage, from, src, dst string) bool {
	for _, in := range s.Body {
		if in.Cmd == "COPY" && in.flag("from") == from {
			f := strings.Fields(in.Args)
			if len(f) == 2 && strings.TrimSuffix(f[0], "/") == src && strings.TrimSuffix(f[1], "/") == dst {
				return true
			}
		}
	}
	return false
}

func TestDockerfileGoVersion(t *testing.T) {
	d := loadDockerfile(t)
	mod, err := os.ReadFile(filepath.Join(d.root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	v, ok := arg(d.build, "GO_VERSION")
	if !ok || v != string(m[1]) {
		t.Fatalf("ARG GO_VERSION=%q, go.mod says go %s", v, m[1])
	}
	var used bool
	for _, in := range d.runs(d.build) {
		used = used || strings.Contains(in.Args, "go${GO_VERSION}.linux-amd64.tar.gz")
	}
	if !used {
		t.Errorf("no RUN installs go${GO_VERSION}")
	}
}

// TestDockerfilePaths: every repository path the build names exists, and every command is built.
func TestDockerfilePaths(t *testing.T) {
	d := loadDockerfile(t)
	for _, in := range d.build.Body {
		if in.Cmd != "COPY" || in.flag("from") != "" {
			continue
		}
		f := strings.Fields(in.Args)
		for _, src := range f[:len(f)-1] {
			if _, err := os.Stat(filepath.Join(d.root, src)); err != nil {
				t.Errorf("line %d: COPY %s: %v", in.Line, src, err)
			}
		}
	}
	rel := regexp.MustCompile(`(?:^|\s)(\./[A-Za-z0-9_./-]+)`)
	var built string
	for _, in := range d.runs(d.build) {
		for _, m := range rel.FindAllStringSubmatch(in.Args, -1) {
			if _, err := os.Stat(filepath.Join(d.root, m[1])); err != nil {
				t.Errorf("line %d: RUN names %s, which the repository lacks", in.Line, m[1])
			}
		}
		if strings.Contains(in.Args, "go build") {
			built += in.Args
		}
	}
	for _, cmd := range []string{"train", "evaluate", "embed", "bench", "data", "mgtbuckets"} {
		if !strings.Contains(built, "./cmd/"+cmd+" ") && !strings.HasSuffix(built, "./cmd/"+cmd) {
			t.Errorf("go build does not build ./cmd/%s", cmd)
		}
	}
	// What the runtime stage copies out of the build's checkout must be in the repository too.
	for _, in := range d.final.Body {
		if in.Cmd != "COPY" {
			continue
		}
		if src, ok := strings.CutPrefix(strings.Fields(in.Args)[0], "/src/convrep/"); ok {
			if _, err := os.Stat(filepath.Join(d.root, src)); err != nil {
				t.Errorf("line %d: the runtime copies %s: %v", in.Line, src, err)
			}
		}
	}
}

func TestDockerfileEntrypointAndVolumes(t *testing.T) {
	d := loadDockerfile(t)
	var entry, vols []string
	for _, in := range d.final.Body {
		switch in.Cmd {
		case "ENTRYPOINT":
			entry = in.JSON
		case "VOLUME":
			vols = in.JSON
		}
	}
	if len(entry) != 1 || filepath.Base(entry[0]) != "train" {
		t.Fatalf("ENTRYPOINT %q, want the train binary alone, in exec form (so that docker run's arguments reach it)", entry)
	}
	// The train binary is there: the build's output folder is copied to the entrypoint's folder.
	var out string
	for _, in := range d.runs(d.build) {
		if m := regexp.MustCompile(`go build .*-o (\S+)/ `).FindStringSubmatch(in.Args); m != nil {
			out = m[1]
		}
	}
	if out == "" || !hasCopy(d.final, d.build.Name, out, filepath.Dir(entry[0])) {
		t.Errorf("the runtime does not copy the build's %q to %s", out, filepath.Dir(entry[0]))
	}
	for _, v := range []string{"/data", "/runs"} {
		found := false
		for _, got := range vols {
			found = found || got == v
		}
		if !found {
			t.Errorf("VOLUME %q lacks %s", vols, v)
		}
	}
}

// TestDockerfileShell: every RUN is valid bash (the stages' SHELL), and pipelines fail when a part fails.
func TestDockerfileShell(t *testing.T) {
	d := loadDockerfile(t)
	for _, s := range []stage{d.build, d.final} {
		if len(s.Body) == 0 || s.Body[0].Cmd != "SHELL" || strings.Join(s.Body[0].JSON, " ") != "/bin/bash -o pipefail -c" {
			t.Errorf("stage %s does not start with SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]", s.Image)
		}
		for _, in := range d.runs(s) {
			cmd := exec.Command("bash", "-n", "-c", in.Args)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("line %d: bash -n: %v\n%s", in.Line, err, out)
			}
			if sc, err := exec.LookPath("shellcheck"); err == nil {
				c := exec.Command(sc, "-s", "bash", "-S", "error", "-")
				c.Stdin = strings.NewReader(in.Args + "\n")
				if out, err := c.CombinedOutput(); err != nil {
					t.Errorf("line %d: shellcheck: %v\n%s", in.Line, err, out)
				}
			}
		}
	}
}

// TestDockerignore: the host's build products stay out of the context, what the build needs stays in.
func TestDockerignore(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, strings.TrimPrefix(l, "/"))
		}
	}
	ignored := func(p string) bool {
		for _, pat := range pats {
			if pat == p || strings.HasPrefix(p, strings.TrimSuffix(pat, "/")+"/") {
				return true
			}
			if ok, _ := filepath.Match(strings.TrimPrefix(pat, "**/"), filepath.Base(p)); ok && strings.HasPrefix(pat, "**/") {
				return true
			}
		}
		return false
	}
	for _, p := range []string{"third_party/gotch/go.mod", "internal/torch/cgo_flags.go", "runs/dse_small_cpu/metrics.jsonl", ".git/HEAD", "cmd/setup/setup.test"} {
		if !ignored(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/train/main.go", "internal/torch/dist.cpp", "experiments/dse_bert_base.toml", "scripts/dse.sh", "Makefile"} {
		if ignored(p) {
			t.Errorf(".dockerignore keeps %s out of the build context", p)
		}
	}
}
