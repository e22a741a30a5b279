package tsne

import (
	"fmt"
	"math"
)

// Options configures Embed. The zero value asks for the defaults named on each field.
type Options struct {
	// Perplexity is the effective number of neighbours of each point's Gaussian (default 30).
	// Embed needs at least 3·Perplexity+1 points.
	Perplexity float64
	// Iterations of gradient descent (default 1000).
	Iterations int
	// Theta is the Barnes-Hut accuracy: a quadtree cell summarises its points for a point when the cell's
	// diagonal over its distance to the cell's centre of mass is below Theta (default 0.5; smaller is
	// slower and closer to exact t-SNE).
	Theta float64
	// Seed fixes the random initial map; equal seeds give equal results.
	Seed uint64
	// PCADims is how many principal components the input is reduced to first (default 50); a negative
	// value keeps the input as it is, and so does a value not below the input's dimension.
	PCADims int
	// Progress, if not nil, is called after each iteration with how many are done of how many.
	Progress func(done, total int)
}

// Defaults used where Options leaves a field zero.
const (
	DefaultPerplexity = 30
	DefaultIterations = 1000
	DefaultTheta      = 0.5
	DefaultPCADims    = 50
)

// withDefaults fills the zero fields and rejects values that cannot work.
func (o Options) withDefaults() (Options, error) {
	if o.Perplexity == 0 {
		o.Perplexity = DefaultPerplexity
	}
	if o.Iterations == 0 {
		o.Iterations = DefaultIterations
	}
	if o.Theta == 0 {
		o.Theta = DefaultTheta
	}
	if o.PCADims == 0 {
		o.PCADims = DefaultPCADims
	}
	switch {
	case !(o.Perplexity > 0) || math.IsInf(o.Perplexity, 0):
		return o, fmt.Errorf("tsne options: perplexity %v is not a positive number", o.Perplexity)
	case o.Iterations < 0:
		return o, fmt.Errorf("tsne options: %d iterations", o.Iterations)
	case !(o.Theta > 0) || math.IsInf(o.Theta, 0):
		return o, fmt.Errorf("tsne options: theta %v is not a positive number", o.Theta)
	}
	return o, nil
}

// neighbours is the number of nearest neighbours whose affinities are kept (bhtsne's 3·perplexity).
func (o Options) neighbours() int { return int(3 * o.Perplexity) }
