// Package torchbin reads PyTorch state dicts written by torch.save
// (pytorch_model.bin) into neutral safetensors.Tensor values, without running
// anything the file asks for.
//
// Both container formats are read: the zip archive of torch >= 1.6
// (<stem>/data.pkl plus one record per storage under <stem>/data/) and the
// older "legacy" stream (magic number, protocol version and system-info
// pickles, the state-dict pickle, the list of storage keys, then each
// storage's raw bytes).
//
// The pickles are decoded by gotch's unpickler (github.com/sugarme/gotch/pickle).
// This package supplies the container handling around it so that a hostile or
// damaged file cannot do more than produce an error:
//
//   - every global the pickle names goes through an allow-list of what a state
//     dict needs (see allow.go); anything else, such as posix.system or
//     builtins.eval, is an error naming module.name;
//   - every length in a pickle is checked against the bytes actually present
//     before gotch allocates for it (guard.go), and every storage's element
//     count against its record before gotch reads it (storage.go);
//   - tensor views are bounds-checked and copied out contiguously, so tied
//     weights that share one storage each come out whole (materialize.go);
//   - panics inside gotch are recovered and returned as errors.
package torchbin
