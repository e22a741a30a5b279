package setupcmd

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

// TestDockerfileLibtorch: the libtorch is PyTorch's wheel of TORCH_VERSION for the image's CUDA release, in a
// virtual environment; the set-up takes it through the environment's Python, with Gloo's headers provided, and
// the runtime keeps torch/lib and the wheel's nvidia/ libraries at the paths the binaries' rpath and
// libtorch_cuda.so's RUNPATH name.
func TestDockerfileLibtorch(t *testing.T) {
	d := loadDockerfile(t)
	version, _ := arg(d.build, "TORCH_VERSION")
	index, _ := arg(d.build, "TORCH_INDEX")
	site, _ := arg(d.build, "SITE")
	if !regexp.MustCompile(`^2\.(1[1-9]|[2-9]\d)\.\d+$`).MatchString(version) {
		t.Errorf("ARG TORCH_VERSION=%q, want PyTorch 2.11 or later", version)
	}
	m := regexp.MustCompile(`^https://download\.pytorch\.org/whl/cu(\d+)(\d)$`).FindStringSubmatch(index)
	img := cudaImage.FindStringSubmatch(d.build.Image)
	switch {
	case m == nil:
		t.Errorf("ARG TORCH_INDEX=%q, want PyTorch's wheel index of one CUDA release (…/whl/cu128)", index)
	case img == nil || !strings.HasPrefix(img[1], m[1]+"."+m[2]+"."):
		t.Errorf("TORCH_INDEX %s is for CUDA %s.%s, the build image is %s", index, m[1], m[2], d.build.Image)
	}
	if fs, _ := arg(d.final, "SITE"); site == "" || fs != site {
		t.Errorf("ARG SITE is %q in the build stage and %q in the runtime: the copied libraries must keep their paths", site, fs)
	}
	var installed, setup, gloo bool
	for _, in := range d.runs(d.build) {
		a := in.Args
		if strings.Contains(a, "python3 -m venv /opt/venv") && strings.Contains(a, `--index-url "$TORCH_INDEX" "torch==${TORCH_VERSION}"`) {
			installed = true
		}
		if strings.Contains(a, "LIBTORCH=/opt/venv/bin/python go run ./cmd/setup") {
			setup = true
			if !strings.Contains(a, "--no-install") {
				t.Errorf("line %d: the set-up runs without --no-install: it would fall back to apt-get", in.Line)
			}
		}
		if strings.Contains(a, "third_party/gloo") && strings.Contains(a, `"$SITE/torch/include/gloo/config.h"`) {
			gloo = true
		}
	}
	if !installed {
		t.Errorf("no RUN installs torch==${TORCH_VERSION} from $TORCH_INDEX into /opt/venv")
	}
	if !setup {
		t.Errorf("no RUN runs the set-up tool with LIBTORCH=/opt/venv/bin/python")
	}
	if !gloo {
		t.Errorf("no RUN provides $SITE/torch/include/gloo/config.h from PyTorch's pinned third_party/gloo")
	}
	for _, dir := range []string{"${SITE}/torch/lib", "${SITE}/nvidia"} {
		if !hasCopy(d.final, d.build.Name, dir, dir) {
			t.Errorf("the runtime stage does not COPY --from=%s %s to the same path", d.build.Name, dir)
		}
	}
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
	for _, cmd := range []string{"train", "evaluate", "embed", "bench", "data", "claims", "convrep"} {
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
