// Package sets reads the evaluation sets in their upstream layouts, one file per set, into the types package
// evaluate measures (evaluate.Split, evaluate.RetrievalSet, evaluate.SRPool) or into ActSet, a dialogue-act set:
//
//   - CLINC150 (clinc150.go): intent classification and out-of-scope detection, data_full.json and
//     data_oos_plus.json;
//   - SNIPS (snips.go): intent classification;
//   - AmazonQA (amazonqa.go): question-answer pairs for response selection, Python-literal lines (pyliteral.go);
//   - Ubuntu IRC (ubuntu.go): response selection on conversations disentangled by the annotated reply links;
//   - MultiWOZ 2.1 (multiwoz.go): dialogue acts, and response selection on its val and test dialogues;
//   - DSTC2 (dstc2.go): dialogue acts from its act-to-utterance pairs;
//   - GSIM, sim-M and sim-R (gsim.go): dialogue acts;
//   - MSR-E2E (msr.go): the semantic-retrieval pool, labelled by its dialogue acts;
//   - a user's CSV or JSON lines file (user.go): labelled texts, or queries and responses.
//
// The dialogue-act sets share acts.go (examples as TOD-BERT builds them, seeded few-shot draws); files.go opens
// gzip and zip members. A malformed file fails naming the file and the place, never a panic (FuzzReaders).
package sets
