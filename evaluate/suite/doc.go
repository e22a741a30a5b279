// Package suite is convrep's evaluation suite (DSE §4.2 and Appendix B, MGT §4.2 and §5.2-5.3, DialogueCSE
// §5.1.2) as a library, one file per task, each registering itself as objectives do (Register, All, Lookup):
//
//   - similarity-based: intent.go, oos.go, response.go (ensembles: ensemble.go, MGT Eq. 7), select.go
//     (checkpoint selection on validation, MGT §4.2), sr.go, suite.go (the similarity tasks of DSE's tables in
//     one run), tsne.go (Figure 1);
//   - fine-tuning: acts.go, finetune_intent.go, finetune_response.go, probe.go (on finetune.go and tuning.go);
//   - results: report.go.
//
// A task's options are a typed struct (IntentOptions, SelectOptions, ...): fill it and call Run, or let the
// evaluate command (cmd/internal/evaluatecmd) fill it from the flags the struct declares (Options.Flags).
// Each Run reads its data (data.go), loads the model that Common.Model names (package modelref resolves
// --model; model.go), runs package evaluate's measures and writes the result as JSON and Markdown
// (common.go). docs/evaluation.md says how to add a task.
package suite
