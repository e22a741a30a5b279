// Package finetune trains a classifier on top of an encoder for the fine-tuning evaluations of the papers:
// dialogue act prediction (multi-label, binary cross-entropy, micro and macro F1; DSE Appendix B, FutureTOD
// §3.2), intent classification (softmax cross-entropy, accuracy; FutureTOD Table 1) and linear probes on
// frozen representations (MGT §5.2-5.3), and a dual encoder for response selection (TrainDual). Both run one
// training loop (loop.go), differing only in their batches and losses. A run draws its batches and its classifier's initialisation from one
// seed, evaluates on the validation set every so many steps (or after every epoch), stops early when it stops
// improving, and keeps the weights that scored best. Defaults gives the papers' protocols (DSE App. B.1,
// FutureTOD App. B); Format writes dialogue histories as TOD-BERT's evaluation code does.
package finetune
