// Package devicecmd is the device command (convrep device). It runs one tiny step through convrep's C++ shim on
// a device: a matrix product with a known result, and on a GPU a CUDA graph captured and replayed and one of
// convrep's fused kernels, compiled with NVRTC, against libtorch's composite. The set-up
// runs it last on a CUDA host (cmd/setup), so that a library the build did not link, or a GPU libtorch cannot
// use, stops the set-up naming the cause rather than the first training run.
//
//	convrep device                 # the first GPU
//	convrep device --device cpu
package devicecmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"convrep/internal/cli"
	"convrep/internal/gpu/jit"
	"convrep/internal/torch"
)

// Command is convrep device; its Check parses without touching a device.
var Command = cli.Command[string]{Name: "device", Parse: parse, Run: run}

func parse(args []string, out io.Writer) (string, error) {
	fs := cli.NewFlags("device", "convrep device [--device cuda]", deviceAbout, out)
	dev := fs.String("device", "cuda", "cpu, cuda or cuda:N")
	err := cli.NoArgs(fs, args)
	return *dev, err
}

// run checks the device name names and prints what passed.
func run(_ context.Context, name string, _ *zap.Logger) error {
	dev, err := torch.ParseDevice(name)
	if err != nil {
		return err
	}
	checked, err := torch.CheckDevice(dev)
	if err != nil {
		return err
	}
	if dev.IsCuda() && torch.KernelsCompiled() { // a build with -tags convrep_nokernels has none to check
		if err := jit.Check(dev); err != nil {
			return fmt.Errorf("%s passed, then: %w", strings.Join(checked, ", "), err)
		}
		checked = append(checked, "a fused kernel (NVRTC)")
	}
	fmt.Printf("device: %s: %s passed\n", torch.DeviceName(dev), strings.Join(checked, ", "))
	return nil
}

// deviceAbout is what device --help says below its usage line.
const deviceAbout = "Runs one tiny step through convrep's shim on the device: a matrix product with a known result and, on a\n" +
	"GPU, a CUDA graph captured and replayed and a fused kernel (NVRTC) against libtorch. The set-up runs it last\n" +
	"on a CUDA host.\n"
