package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
)

// Digest identifies what a checkpoint belongs to: the settings that change the trajectory. Output and
// logging knobs are left out, and so is max_steps under a constant schedule, so that such a run may be
// extended; a decaying schedule's rates depend on it. Settings that change no result (train.deterministic,
// train.tensorboard) are tagged json:"-" and never reach the hash. Paths enter as the file wrote them
// (digestSpelling), so an experiment file moved elsewhere keeps its digest.
func (e *Experiment) Digest() string {
	c := *e
	c.OutputDir, c.Train.LogEvery, c.Train.CheckpointEvery, c.Train.KeepCheckpoints = "", 0, 0, 0
	c.Train.EvalEvery, c.Train.EarlyStoppingPatience = 0, 0
	if c.Train.Schedule == "constant" {
		c.Train.MaxSteps = 0
	}
	c.Data.CacheDir = ""
	if w := e.written; w != nil { // the paths as written, not where the file lies (paths.go)
		c.Model.Backbone, c.Model.Tokenizer = digestSpelling(w.backbone, true), digestSpelling(w.tokenizer, true)
		c.Data.Root = digestSpelling(w.root, true)
		c.Data.Files = nil
		for _, f := range w.files {
			c.Data.Files = append(c.Data.Files, digestSpelling(f, false))
		}
		if len(w.objective) > 0 {
			c.Objective = maps.Clone(e.Objective)
			for k, p := range w.objective {
				c.Objective[k] = digestSpelling(p, true)
			}
		}
	}
	if d := c.Train.DropLast; d != nil && *d {
		c.Train.DropLast = nil // dropping was all there was before the setting: those digests stay
	}
	b, _ := json.Marshal(c)
	// How the ranks talk changes no result, and neither does their number; whether negatives stay on their
	// rank does (the digests of runs written before [distributed] existed stay as they were).
	if e.Distributed.LocalNegatives {
		b = append(b, "local_negatives"...)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}
