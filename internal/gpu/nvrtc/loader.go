package nvrtc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// NVRTC's own types, declared here so that no CUDA header is needed: nvrtcResult is an enum (0 is
// NVRTC_SUCCESS), nvrtcProgram an opaque pointer.
typedef int cv_result;
typedef void *cv_program;

typedef struct {
	void *handle;
	cv_result (*version)(int *, int *);
	cv_result (*create)(cv_program *, const char *, const char *, int, const char *const *, const char *const *);
	cv_result (*compile)(cv_program, int, const char *const *);
	cv_result (*log_size)(cv_program, size_t *);
	cv_result (*log)(cv_program, char *);
	cv_result (*ptx_size)(cv_program, size_t *);
	cv_result (*ptx)(cv_program, char *);
	cv_result (*destroy)(cv_program *);
	const char *(*error_string)(cv_result);
} cv_api;

// cv_open dlopens path and resolves the functions convrep calls into api. It returns 0 on success, else -1
// with the reason in err (errlen bytes).
static int cv_open(const char *path, cv_api *api, char *err, size_t errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *msg = dlerror();
		snprintf(err, errlen, "%s", msg ? msg : path);
		return -1;
	}
	struct { void **slot; const char *name; } syms[] = {
		{(void **)&api->version, "nvrtcVersion"},
		{(void **)&api->create, "nvrtcCreateProgram"},
		{(void **)&api->compile, "nvrtcCompileProgram"},
		{(void **)&api->log_size, "nvrtcGetProgramLogSize"},
		{(void **)&api->log, "nvrtcGetProgramLog"},
		{(void **)&api->ptx_size, "nvrtcGetPTXSize"},
		{(void **)&api->ptx, "nvrtcGetPTX"},
		{(void **)&api->destroy, "nvrtcDestroyProgram"},
		{(void **)&api->error_string, "nvrtcGetErrorString"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		dlerror();
		*syms[i].slot = dlsym(h, syms[i].name);
		if (*syms[i].slot == NULL) {
			snprintf(err, errlen, "%s: no symbol %s: not an NVRTC library", path, syms[i].name);
			dlclose(h);
			return -1;
		}
	}
	api->handle = h;
	return 0;
}

static cv_result cv_version(const cv_api *api, int *major, int *minor) { return api->version(major, minor); }

static const char *cv_error_string(const cv_api *api, cv_result r) { return api->error_string(r); }

// cv_compile compiles src into PTX. On return *stage says which call failed (0: none, 1: create, 2: compile,
// 3: reading the log or the PTX); *log and *ptx, when not NULL, are malloc'd and the caller frees them. The log
// is read whenever the program was created, so that a failed compile returns NVRTC's messages.
static cv_result cv_compile(const cv_api *api, const char *src, const char *name, const char *const *opts, int nopts,
		int *stage, char **log, size_t *log_len, char **ptx, size_t *ptx_len) {
	cv_program prog = NULL;
	*stage = 1;
	*log = NULL;
	*ptx = NULL;
	*log_len = 0;
	*ptx_len = 0;
	cv_result r = api->create(&prog, src, name, 0, NULL, NULL);
	if (r != 0) {
		return r;
	}
	cv_result cr = api->compile(prog, nopts, opts);
	size_t n = 0;
	if (api->log_size(prog, &n) == 0 && n > 0) {
		*log = malloc(n);
		if (*log != NULL && api->log(prog, *log) == 0) {
			*log_len = strnlen(*log, n);
		}
	}
	if (cr != 0) {
		*stage = 2;
		api->destroy(&prog);
		return cr;
	}
	*stage = 3;
	r = api->ptx_size(prog, &n);
	if (r == 0) {
		*ptx = malloc(n > 0 ? n : 1);
		if (*ptx == NULL) {
			api->destroy(&prog);
			return 1; // NVRTC_ERROR_OUT_OF_MEMORY
		}
		r = api->ptx(prog, *ptx);
		if (r == 0) {
			*ptx_len = strnlen(*ptx, n); // the size counts the terminating NUL
			*stage = 0;
		}
	}
	api->destroy(&prog);
	return r;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// EnvLibrary names the environment variable that forces one NVRTC library (a path); when set, no other is tried.
const EnvLibrary = "CONVREP_NVRTC"

// sonames are tried in order when $CONVREP_NVRTC is unset: CUDA 13's (PyTorch's cu13 wheels), CUDA 12's, the
// CUDA 11.2+ one that CUDA 11.8 keeps (Debian's libnvrtc11.2), and the unversioned development link.
var sonames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// library is a loaded NVRTC: its resolved functions, where it came from and its version.
type library struct {
	api          *C.cv_api
	path         string
	major, minor int
}

var (
	loadOnce  sync.Once
	loaded    *library
	loadErr   error
	compileMu sync.Mutex // compiles are serialized (see Compile)
)

// lib loads NVRTC on first use and returns the same library, or the same error, ever after.
func lib() (*library, error) {
	loadOnce.Do(func() { loaded, loadErr = open() })
	return loaded, loadErr
}

// candidates are the names open tries, in order, and where they came from for its error.
func candidates() (names []string, from string) {
	if p := os.Getenv(EnvLibrary); p != "" {
		return []string{p}, "$" + EnvLibrary
	}
	return sonames, "the dynamic loader's search path"
}

// open dlopens the first of candidates that loads and holds NVRTC's functions.
func open() (*library, error) {
	names, from := candidates()
	var failures []string
	for _, name := range names {
		api := (*C.cv_api)(C.calloc(1, C.sizeof_cv_api))
		cname := C.CString(name)
		var msg [512]C.char
		rc := C.cv_open(cname, api, &msg[0], C.size_t(len(msg)))
		C.free(unsafe.Pointer(cname))
		if rc != 0 {
			failures = append(failures, C.GoString(&msg[0]))
			C.free(unsafe.Pointer(api))
			continue
		}
		l := &library{api: api, path: name}
		var major, minor C.int
		if r := C.cv_version(api, &major, &minor); r != 0 {
			return nil, fmt.Errorf("nvrtc: %s: nvrtcVersion: %s", name, l.errorString(r))
		}
		l.major, l.minor = int(major), int(minor)
		return l, nil
	}
	return nil, fmt.Errorf("nvrtc: no NVRTC library loads (tried %s from %s): %s; install CUDA's NVRTC "+
		"(`go run ./cmd/setup` installs Debian's libnvrtc11.2; a CUDA PyTorch wheel carries it) or set %s to its path",
		strings.Join(names, ", "), from, strings.Join(failures, "; "), EnvLibrary)
}

func (l *library) errorString(r C.cv_result) string {
	if s := C.cv_error_string(l.api, r); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("nvrtcResult %d", int(r))
}

// compile runs one program through NVRTC with opts; log is NVRTC's log, whatever the outcome.
func (l *library) compile(src, name string, opts []string) (ptx []byte, log string, err error) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	copts := unsafe.Slice((**C.char)(C.malloc(C.size_t(len(opts))*C.size_t(unsafe.Sizeof((*C.char)(nil))))), len(opts))
	defer C.free(unsafe.Pointer(&copts[0]))
	for i, o := range opts {
		copts[i] = C.CString(o)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	var (
		stage          C.int
		clog, cptx     *C.char
		logLen, ptxLen C.size_t
	)
	r := C.cv_compile(l.api, csrc, cname, &copts[0], C.int(len(opts)), &stage, &clog, &logLen, &cptx, &ptxLen)
	if clog != nil {
		log = C.GoStringN(clog, C.int(logLen))
		C.free(unsafe.Pointer(clog))
	}
	if cptx != nil {
		ptx = C.GoBytes(unsafe.Pointer(cptx), C.int(ptxLen))
		C.free(unsafe.Pointer(cptx))
	}
	if r != 0 {
		step := map[C.int]string{1: "nvrtcCreateProgram", 2: "nvrtcCompileProgram", 3: "nvrtcGetPTX"}[stage]
		return nil, log, fmt.Errorf("%s: %s", step, l.errorString(r))
	}
	return ptx, log, nil
}
