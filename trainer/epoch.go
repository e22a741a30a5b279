package trainer

// EpochAware is a Dataset whose batches depend on the epoch as well as on the example indices, such as a
// masked-LM dataset that re-masks every example each epoch (dynamic masking) from a random source derived
// from (seed, epoch, example): Run tells it the epoch before asking for that epoch's batches, so a resumed
// run builds exactly the batches the first run would have.
type EpochAware interface {
	SetEpoch(epoch int)
}

// enterEpoch tells d the epoch when it cares.
func enterEpoch(d Dataset, epoch int) {
	if a, ok := d.(EpochAware); ok {
		a.SetEpoch(epoch)
	}
}
