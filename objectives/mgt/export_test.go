package mgt

import "convrep/objectives"

// What the package's external tests (package mgt_test, which import mgttest, itself built on this package)
// reach inside it.

// ResponseTensors is the prefix of the response encoder's parameters in a checkpoint.
const ResponseTensors = responseTensors

// BuildData builds the data an MGT run trains on (buildMGTData) and returns its report and every example's
// negatives, segment by segment.
func BuildData(env objectives.DataEnv, o Config) (Report, []int32, error) {
	d, _, err := buildMGTData(env, o)
	if err != nil {
		return Report{}, nil, err
	}
	return d.Report().(Report), d.negs.Idx, nil
}
