package objectives

// TrainDefaults are the values an objective gives [train] keys that an experiment file leaves out, where its
// authors' code differs from convrep's general defaults. The experiment applies them when it is loaded
// (experiment.Load); a key the file sets wins.
type TrainDefaults struct {
	// HeadLRScale makes train.head_lr, when unset, train.lr × HeadLRScale (DSE's lr_scale); 0 means 1, the
	// encoder's rate.
	HeadLRScale float64
	// KeepLastBatch keeps each epoch's last partial batch when train.drop_last is unset, as torch's
	// DataLoader does with drop_last=False; false drops it.
	KeepLastBatch bool
}

// TrainDefaulter is a Config whose objective has TrainDefaults of its own.
type TrainDefaulter interface {
	TrainDefaults() TrainDefaults
}

// TrainDefaultsOf is c's TrainDefaults: its own, or the zero value (head_lr = lr, the last partial batch
// dropped) for a Config without any, and for nil.
func TrainDefaultsOf(c Config) TrainDefaults {
	if d, ok := c.(TrainDefaulter); ok {
		return d.TrainDefaults()
	}
	return TrainDefaults{}
}
