package sets

import (
	"fmt"
	"sort"
	"strings"

	"convrep/datasets"
	"convrep/evaluate"
)

// MSRIntentLabel is the intent label of an MSR-E2E user message for semantic retrieval (DialogueCSE §5.1.2:
// "sentences with the intent labels"; the paper's MDC is this corpus), made from the message's dialogue acts:
// each act's name with the names of its slots, values dropped, acts of one name merged, names lower-cased and
// sorted, slots joined by ";" and acts by "+":
//
//	greeting(greeting=Hi)  request(moviename;genre=foreign;city=Houma)  ->  greeting(greeting)+request(city;genre;moviename)
//	inform(date=tomorrow;starttime=7pm)                                 ->  inform(date;starttime)
//	thanks()                                                            ->  thanks()
//
// Why this one (measured on the 38,268 user messages of the three files): the corpus's intents alone, the act
// names (inform, request, thanks, ...), give 67 labels of which inform holds 41% of the pool and request 39%, so
// most of a BM25 list would be positive; keeping values makes nearly every message a label of its own. With the
// slot names, the pool's 21,230 texts (BuildSRPool) carry 4,089 labels: the largest, inform(restaurantname),
// holds 5.9%, two texts share a label with probability about 1.1%, and 2,632 labels have one text (12% of the
// pool: queries with no positive, dropped). Keeping only the requested slots of request acts (request(moviename)
// for the example above) gives about 1,550 labels, the largest, request(taxi), 10%; it was not taken, as it calls
// "find a foreign movie in Houma this week" and "which movies are on tonight" one intent.
//
// No acts gives "". An act that is not name(...), a name that is not letters, digits and "_", or a slot name
// that is not letters, digits, "_" and "-" (the corpus writes "date-tomorrow" once) is an error.
func MSRIntentLabel(acts []string) (string, error) {
	slots := map[string]map[string]bool{} // act name -> slot names
	for _, a := range acts {
		name, names, err := parseMSRAct(a)
		if err != nil {
			return "", err
		}
		if slots[name] == nil {
			slots[name] = map[string]bool{}
		}
		for _, s := range names {
			slots[name][s] = true
		}
	}
	parts := make([]string, 0, len(slots))
	for name, set := range slots {
		names := make([]string, 0, len(set))
		for s := range set {
			names = append(names, s)
		}
		sort.Strings(names)
		parts = append(parts, name+"("+strings.Join(names, ";")+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, "+"), nil
}

// parseMSRAct splits one act, "request(moviename;city=Seattle)", into its lower-cased name and slot names
// (values dropped, empty items skipped: "thanks()", "request(ticket; date=today;)").
func parseMSRAct(act string) (string, []string, error) {
	a := strings.TrimSpace(act)
	open := strings.IndexByte(a, '(')
	if open < 0 || !strings.HasSuffix(a, ")") {
		return "", nil, fmt.Errorf("dialogue act %q is not name(slot=value;...)", clip(a))
	}
	name := strings.ToLower(strings.TrimSpace(a[:open]))
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isNameRune(r, false) }) >= 0 {
		return "", nil, fmt.Errorf("dialogue act %q: act name %q is not letters, digits and _", clip(a), clip(name))
	}
	var names []string
	for _, item := range strings.Split(a[open+1:len(a)-1], ";") {
		key, _, _ := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if key == "" {
			continue
		}
		if strings.IndexFunc(key, func(r rune) bool { return !isNameRune(r, true) }) >= 0 {
			return "", nil, fmt.Errorf("dialogue act %q: slot name %q is not letters, digits, _ and -", clip(a), clip(key))
		}
		names = append(names, key)
	}
	return name, names, nil
}

// isNameRune tells the runes of an act name (ASCII letters, digits, _) or of a slot name (those and -).
func isNameRune(r rune, slot bool) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || slot && r == '-'
}

// clip shortens s for an error message, so that a hostile line does not make a huge one.
func clip(s string) string {
	const most = 80
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + "…"
}

// BuildSRPool makes the pool of MSR-E2E semantic retrieval from the user messages (datasets.ReadMSRUserMessages):
// each message's label is MSRIntentLabel of its acts (a malformed act fails naming the file and the line);
// messages under MinSRWords words or without a label are left out; a text given more than once is kept once,
// at its first place, when every copy has the same label, and dropped when the copies disagree.
//
// DialogueCSE §5.1.2 also discards the candidates annotators judged inconsistent with their intent label; no
// such judgement exists for MSR-E2E, so its own act annotation is taken as it is.
func BuildSRPool(msgs []datasets.MSRUserMessage, source string) (*evaluate.SRPool, error) {
	p := &evaluate.SRPool{Dataset: "msr_e2e", Source: source, Messages: len(msgs)}
	first := map[string]int{} // text -> its place in Texts
	conflict := map[string]bool{}
	for _, m := range msgs {
		label, err := MSRIntentLabel(m.Acts)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d (session %s): %w", m.Source, m.Line, m.Session, err)
		}
		switch {
		case len(strings.Fields(m.Text)) < evaluate.MinSRWords:
			p.Short++
		case label == "":
			p.Unlabelled++
		default:
			i, seen := first[m.Text]
			if !seen {
				first[m.Text] = len(p.Texts)
				p.Texts = append(p.Texts, m.Text)
				p.Labels = append(p.Labels, label)
				continue
			}
			p.Repeats++
			if p.Labels[i] != label {
				conflict[m.Text] = true
			}
		}
	}
	if len(conflict) > 0 {
		p.Conflicting = len(conflict)
		keep := 0
		for i, t := range p.Texts {
			if !conflict[t] {
				p.Texts[keep], p.Labels[keep] = t, p.Labels[i]
				keep++
			}
		}
		p.Texts, p.Labels = p.Texts[:keep], p.Labels[:keep]
	}
	if len(p.Texts) == 0 {
		return nil, fmt.Errorf("%s: no user message of at least %d words with dialogue acts", source, evaluate.MinSRWords)
	}
	return p, nil
}

// ReadMSRPool reads MSR-E2E from its corpus folder (see datasets.ReadMSRUserMessages) and builds the pool.
func ReadMSRPool(root string) (*evaluate.SRPool, error) {
	msgs, err := datasets.ReadMSRUserMessages(root, datasets.ReadOptions{})
	if err != nil {
		return nil, err
	}
	return BuildSRPool(msgs, root)
}
