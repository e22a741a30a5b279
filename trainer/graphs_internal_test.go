package trainer

import (
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"convrep/experiment"
)

// Where a graph cannot replay the step, the run says why once and steps eagerly.
func TestGraphsOffSayWhy(t *testing.T) {
	for _, c := range []struct {
		name  string
		world int
		accum int
		dev   gotch.Device
		why   string
	}{
		{"the CPU", 1, 1, gotch.CPU, "the device is the CPU"},
		{"several ranks", 2, 1, gotch.CPU, "2 data-parallel ranks"},
		{"gradient accumulation", 1, 4, gotch.CPU, "train.grad_accumulation = 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zap.InfoLevel)
			e := &experiment.Experiment{}
			e.Train.CUDAGraphs, e.Train.GradAccumulation = true, c.accum
			if gs := newGraphSteps(e, c.dev, c.world, zap.New(core)); gs != nil {
				t.Fatal("a graph was made")
			}
			all := logs.All()
			if len(all) != 1 || !strings.Contains(all[0].Message, "stepping eagerly") ||
				!strings.Contains(all[0].ContextMap()["why"].(string), c.why) {
				t.Errorf("logged %v, want one line saying %q", all, c.why)
			}
		})
	}
	e := &experiment.Experiment{}
	if gs := newGraphSteps(e, gotch.CPU, 1, zap.NewNop()); gs != nil {
		t.Error("a graph was made without train.cuda_graphs")
	}
}
