// Package suite is convrep's evaluation suite (DSE §4.2 and Appendix B, MGT §4.2 and §5.2-5.3, DialogueCSE
// §5.1.2) as a library, one file per task (intent.go, response.go with MGT's ensemble, select.go, acts.go,
// report.go, ...; `evaluate --help` lists them), each registering itself as objectives do (Register, All,
// Lookup). What the tasks share: common.go (the options every model-side task takes), data.go (reading a
// task's data through package evaluate/sets), model.go (loading --model), prepare.go, finetune.go and
// tuning.go (the fine-tuning tasks' runs and --protocol), registry.go.
//
// A task's options are a typed struct (IntentOptions, SelectOptions, ...): fill it and call Run, or let the
// evaluate command (cmd/internal/evaluatecmd) fill it from the flags the struct declares (Options.Flags).
// Each Run reads its data (data.go), loads the model that Common.Model names (package modelref resolves
// --model; model.go), runs package evaluate's measures and writes the result as JSON and Markdown
// (common.go). docs/evaluation.md says how to add a task.
package suite
