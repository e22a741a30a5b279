package mgt

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
	"convrep/objectives/mgt/ensemble"
	"convrep/rundir"
	"convrep/safetensors"
)

// DualEncoder is one trained MGT model (§3.1): a context and a response encoder and their pooling.
type DualEncoder struct {
	Context, Response *models.Model
	Pooling           models.Pooling
}

// embed pools the contexts [B,d] and the candidates [B·k,d], in its caller's scope.
func (d DualEncoder) embed(ctx, cands models.Input, train bool) (c, r *ts.Tensor, err error) {
	if c, err = pooled(d.Context, ctx, d.Pooling, train); err != nil {
		return nil, nil, fmt.Errorf("context encoder: %w", err)
	}
	if r, err = pooled(d.Response, cands, d.Pooling, train); err != nil {
		return nil, nil, fmt.Errorf("response encoder: %w", err)
	}
	return c, r, nil
}

// pooled is m's pooled encoding of in; the hidden states are freed once pooled.
func pooled(m *models.Model, in models.Input, p models.Pooling, train bool) (*ts.Tensor, error) {
	out, err := m.Forward(in, train)
	if err != nil {
		return nil, err
	}
	defer out.Drop()
	return models.Pool(p, out.Last, in.Mask)
}

// Probabilities are the model's softmax over each context's k candidates (the summand of Eq. 7), [B][k],
// computed without autograd or dropout. Candidates are laid out as in Batch.
func (d DualEncoder) Probabilities(ctx, cands models.Input, k int64) ([][]float64, error) {
	var rows [][]float64
	err := torch.Scoped("mgt probabilities", func(torch.Keep) error {
		return torch.NoGrad(func() error {
			c, r, err := d.embed(ctx, cands, false)
			if err != nil {
				return err
			}
			scores, err := CandidateScores(c, r, k)
			if err != nil {
				return err
			}
			alphas, err := tensorRows(scores)
			if err != nil {
				return err
			}
			rows = make([][]float64, len(alphas))
			for i, a := range alphas {
				rows[i] = ensemble.Softmax(a)
			}
			return nil
		})
	})
	return rows, err
}

// EnsembleProbabilities is MGT's Eq. 7: p(r_i | c) = (1/L) Σ_l exp(α^l_i) / Σ_j exp(α^l_j), the L members'
// candidate probabilities averaged. It serves the MGT ensemble and the plain ensemble alike; rank the
// candidates by it (the ground truth's rank gives MRR and Hits@1, Table 2).
func EnsembleProbabilities(members []DualEncoder, ctx, cands models.Input, k int64) ([][]float64, error) {
	per := make([][][]float64, len(members))
	for l, m := range members {
		var err error
		if per[l], err = m.Probabilities(ctx, cands, k); err != nil {
			return nil, fmt.Errorf("ensemble member %d: %w", l+1, err)
		}
	}
	return ensemble.Average(per)
}

// tensorRows copies a [B,k] tensor to Go as float64 rows.
func tensorRows(x *ts.Tensor) ([][]float64, error) {
	size, err := x.Size()
	if err != nil || len(size) != 2 {
		return nil, fmt.Errorf("scores have shape %v, want [batch, candidates]", size)
	}
	flat, err := torch.Read(x)
	if err != nil {
		return nil, err
	}
	rows := make([][]float64, size[0])
	for i := range rows {
		rows[i] = flat[int64(i)*size[1] : int64(i+1)*size[1]]
	}
	return rows, nil
}

// LoadDualEncoder reads the dual encoder an mgt run trained: the configuration from <run>/model/config.json
// (written when the run finished) and both encoders from the run's newest checkpoint, where the context
// encoder's parameters are param/<name> and the response encoder's param/mgt_response.<name>.
func LoadDualEncoder(runDir string, pooling models.Pooling, dev gotch.Device) (*DualEncoder, error) {
	if _, err := models.ParsePooling(string(pooling)); err != nil {
		return nil, fmt.Errorf("load dual encoder %s: %w", runDir, err)
	}
	encs, err := loadRunEncoders(runDir, dev, "param/", responseTensors)
	if err != nil {
		return nil, err
	}
	return &DualEncoder{Context: encs[0], Response: encs[1], Pooling: pooling}, nil
}

// LoadResponseEncoder reads the response encoder f_r alone from an mgt run folder (as LoadDualEncoder does),
// and the checkpoint it came from. MGT §3.3 ranks the response pool with it.
func LoadResponseEncoder(runDir string, dev gotch.Device) (*models.Model, string, error) {
	path, err := NewestCheckpoint(runDir)
	if err != nil {
		return nil, "", err
	}
	encs, err := loadRunEncoders(runDir, dev, responseTensors)
	if err != nil {
		return nil, "", err
	}
	return encs[0], path, nil
}

// responseTensors is the prefix of the response encoder's tensors in a checkpoint.
const responseTensors = "param/" + ResponsePrefix + "."

// NewestCheckpoint is the newest checkpoint of a finished run: the run must hold model/config.json (written
// when it finished, after its final checkpoint) and at least one checkpoint.
func NewestCheckpoint(runDir string) (string, error) {
	r, err := rundir.Open(runDir)
	if err != nil {
		return "", fmt.Errorf("load dual encoder %s: not a finished run: %w", runDir, err)
	}
	path, err := r.Newest()
	if err != nil {
		return "", fmt.Errorf("load dual encoder %s: %w", runDir, err)
	}
	return path, nil
}

// HasResponseEncoder says whether a checkpoint holds an MGT response encoder (param/mgt_response.* tensors),
// reading only the file's header.
func HasResponseEncoder(checkpointPath string) (bool, error) {
	_, infos, err := safetensors.ReadHeader(checkpointPath)
	if err != nil {
		return false, err
	}
	for _, t := range infos {
		if strings.HasPrefix(t.Name, responseTensors) {
			return true, nil
		}
	}
	return false, nil
}

// evaluation is what evaluation asks of MGT (objectives.Evaluation): the response encoder of its checkpoints,
// and its ensemble (Eq. 7). MGT writes no head.
type evaluation struct{}

// ResponseEncoder is the response encoder f_r of an MGT checkpoint, nil for a checkpoint without one.
func (evaluation) ResponseEncoder(cfg *models.Config, path string, dev gotch.Device) (*models.Model, error) {
	ok, err := HasResponseEncoder(path)
	if err != nil || !ok {
		return nil, err
	}
	return ResponseEncoderAt(cfg, path, dev)
}

func (evaluation) Head(path, name string) (objectives.Head, error) { return nil, nil }

// Ensemble is Eq. 7 on the members' scores α^l: each member's softmax over a query's candidates, averaged
// over the members, as EnsembleProbabilities computes it on tensors.
func (evaluation) Ensemble(scores [][][]float64) ([][]float64, error) {
	per := make([][][]float64, len(scores))
	for l, member := range scores {
		per[l] = make([][]float64, len(member))
		for i, alpha := range member {
			per[l][i] = ensemble.Softmax(alpha)
		}
	}
	return ensemble.Average(per)
}

// ResponseEncoderAt builds an encoder of configuration cfg and loads the response encoder of the checkpoint at
// path into it.
func ResponseEncoderAt(cfg *models.Config, path string, dev gotch.Device) (*models.Model, error) {
	weights, err := rundir.Weights(path)
	if err != nil {
		return nil, fmt.Errorf("response encoder: %w", err)
	}
	return encoderFrom(cfg, weights, path, responseTensors, dev)
}

// loadRunEncoders builds one encoder per tensor prefix from a finished run's configuration and newest
// checkpoint.
func loadRunEncoders(runDir string, dev gotch.Device, prefixes ...string) ([]*models.Model, error) {
	path, err := NewestCheckpoint(runDir)
	if err != nil {
		return nil, err
	}
	cfg, err := models.ReadConfig(filepath.Join(rundir.At(runDir).ModelDir(), "config.json"))
	if err != nil {
		return nil, fmt.Errorf("load dual encoder %s: %w", runDir, err)
	}
	weights, err := rundir.Weights(path)
	if err != nil {
		return nil, fmt.Errorf("load dual encoder %s: %w", runDir, err)
	}
	out := make([]*models.Model, len(prefixes))
	for i, prefix := range prefixes {
		if out[i], err = encoderFrom(cfg, weights, path, prefix, dev); err != nil {
			return nil, fmt.Errorf("load dual encoder %s: %w", runDir, err)
		}
	}
	return out, nil
}

// encoderFrom builds an encoder of configuration cfg holding the tensors <prefix><name> of a checkpoint's
// weights sd (rundir.Weights).
func encoderFrom(cfg *models.Config, sd map[string]safetensors.Tensor, path, prefix string, dev gotch.Device) (*models.Model, error) {
	found := false
	for name := range sd {
		found = found || strings.HasPrefix(name, prefix)
	}
	if !found && prefix == responseTensors {
		return nil, fmt.Errorf("%s holds no MGT response encoder (no %s* tensors): not a checkpoint of an mgt run", path, prefix)
	}
	m, err := models.New(cfg, models.Heads{}, dev)
	if err != nil {
		return nil, err
	}
	if err := m.LoadTensors(sd, prefix); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return m, nil
}
