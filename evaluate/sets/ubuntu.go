package sets

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"convrep/evaluate"
)

// ubuntuSplitStream is the second PCG seed word of the split-point draw ("convrep3"), so that it is independent
// of the support-set and candidate draws made with the same seed.
const ubuntuSplitStream = 0x636f6e7672657033

// DefaultUbuntuMinContext is MinContext's value when it is left at zero: DSTC7's "more than 3 turns".
const DefaultUbuntuMinContext = 4

// UbuntuOptions tunes ReadUbuntuIRC; the zero value follows DSTC7 (see ReadUbuntuIRC for the rules).
type UbuntuOptions struct {
	MinContext int    // the fewest context messages before the response; 0 means DefaultUbuntuMinContext
	MaxContext int    // keep only the last MaxContext context messages; 0 keeps them all
	Seed       uint64 // seeds the split point of each conversation
}

// ubuntuMessage is one kept message of a conversation.
type ubuntuMessage struct {
	Line    int // 0-based line of the .ascii.txt file
	Speaker string
	Text    string
}

// ReadUbuntuIRC builds the response-selection set of one split folder of the Ubuntu IRC disentanglement data
// (e.g. .../ubuntu_irc/data/test): every FILE.annotation.txt in dir with its FILE.ascii.txt. The rows depend
// on opt, which Source records beside dir.
//
// The logs and reply links are those of Kummerfeld et al. (2019, "A Large-Scale Corpus for Conversation
// Disentanglement", ACL; github jkkummerfeld/irc-disentanglement, data/README.md). The examples are made the
// way DSTC7 track 1, subtask 1 made its Ubuntu ones (Gunasekara et al. 2019, "DSTC7 Task 1: Noetic End-to-End
// Response Selection"; the track's data description, github IBM/dstc-noesis docs/source/data_description.rst).
// DSTC7 disentangled the whole channel with a model; here the links are the human ones. Each rule says where
// it comes from, and where the data here forced a departure.
//
//  1. Messages. Line n of FILE.ascii.txt is message n, counted from 0 (data/README.md). A message line is
//     "[hh:mm] <nick> text" or the action "[hh:mm]  * nick text"; the speaker is nick and the text what follows
//     it, trimmed. Time stamps and speaker names are stripped; a name the text starts with ("Amaranth: try",
//     IRC's way to address someone) is part of what was said and kept, as in the sample candidates of the data
//     description. The "<unconvertable>" marks of the ASCII files are kept as written. Lines starting "=== "
//     are system messages (joins, quits, nick changes, some logs' actions) and are dropped, as are messages
//     with no text. Speakers compare ignoring case, as IRC nicks do; a nick change makes two speakers. A turn
//     is one message: consecutive messages of one speaker are not merged.
//  2. Conversations. Each "i j -" line of FILE.annotation.txt links messages i and j (either order; i == j
//     starts a conversation). A conversation is a connected component of the links, as the dataset's own
//     tools/format_conversion/graph_to_cluster.py defines it; components are formed over every linked line,
//     system messages included (an annotator may link a "=== nick waves" action in), and the dropped messages
//     are removed afterwards. A conversation's messages run in line order.
//  3. Complete conversations only. Only messages from the cutoff on have their own links annotated (line 1000
//     in these files; the cutoff is the smallest max(i, j) over a file's links, as graph_to_cluster.py takes
//     it). Earlier lines appear only where a later message replies to them, so a conversation reaching before
//     the cutoff may lack its start and messages in between; it is dropped (41 of 583 in the test split).
//     DSTC7's dialogues were whole conversations ("a typical dialog starts with a question that was asked by
//     participant_1", data description).
//  4. Participants. DSTC7 kept two-party conversations and asked for participant_2's next turn (data
//     description). Here that filter leaves 50 examples in the test split and 22 in dev, fewer than the 100
//     candidates of a query, so any number of speakers is kept, as DSTC8 track 2 did with this same data
//     ("conversations with more than 2 participants", github dstc8-track2/NOESIS-II, README). What carries
//     over: the response is the conversation's next message, by another speaker than the last context message.
//  5. Split point. A split point k (0-based message index in the conversation) is valid when k >= MinContext
//     and speaker(k) != speaker(k-1). The context is messages 0..k-1, oldest first (only the last MaxContext of
//     them when MaxContext > 0, this package's option, not DSTC7's), and the response is message k. DSTC7's
//     contexts hold "more than 3 turns" (data description), hence MinContext 4 by default. One example is made
//     per conversation that has a valid split point, as DSTC7 made one per dialogue; the others are skipped.
//  6. The draw. One generator per call, Go's math/rand/v2 rand.NewPCG(opt.Seed, ubuntuSplitStream), i.e.
//     rand.NewPCG(Seed, 0x636f6e7672657033). Files are visited in byte order of the annotation file names and
//     a file's conversations in order of their first line. For each conversation with n >= 1 valid split
//     points, listed ascending, the one at position Uint64() mod n is taken: one draw per such conversation,
//     even when n == 1.
//  7. Candidates. Subtask 1 offers 100 candidates: the true next message and 99 others drawn at random. The
//     rows here are one per conversation, so SampleCandidates(set.Responses, 100, seed) draws the 99 from the
//     responses of the split's other conversations (never a text equal to the truth).
func ReadUbuntuIRC(dir string, opt UbuntuOptions) (*evaluate.RetrievalSet, error) {
	if opt.MinContext < 0 || opt.MaxContext < 0 {
		return nil, fmt.Errorf("read ubuntu irc %s: MinContext %d and MaxContext %d must not be negative",
			dir, opt.MinContext, opt.MaxContext)
	}
	if opt.MinContext == 0 {
		opt.MinContext = DefaultUbuntuMinContext
	}
	if opt.MaxContext > 0 && opt.MaxContext < opt.MinContext {
		return nil, fmt.Errorf("read ubuntu irc %s: MaxContext %d is below MinContext %d",
			dir, opt.MaxContext, opt.MinContext)
	}
	files, err := ubuntuAnnotationFiles(dir)
	if err != nil {
		return nil, err
	}
	set := &evaluate.RetrievalSet{Dataset: "ubuntu",
		Source: fmt.Sprintf("%s#min_context=%d,max_context=%d,split_seed=%d", dir, opt.MinContext, opt.MaxContext, opt.Seed)}
	g := rand.NewPCG(opt.Seed, ubuntuSplitStream)
	for _, ann := range files {
		convs, err := ubuntuConversations(ann)
		if err != nil {
			return nil, err
		}
		for _, c := range convs {
			valid := ubuntuSplitPoints(c, opt.MinContext)
			if len(valid) == 0 {
				continue
			}
			k := valid[g.Uint64()%uint64(len(valid))]
			from := 0
			if opt.MaxContext > 0 && k > opt.MaxContext {
				from = k - opt.MaxContext
			}
			ctx := make([]string, 0, k-from)
			for _, m := range c[from:k] {
				ctx = append(ctx, m.Text)
			}
			set.Contexts = append(set.Contexts, ctx)
			set.Responses = append(set.Responses, c[k].Text)
		}
	}
	if len(set.Responses) == 0 {
		return nil, fmt.Errorf("read ubuntu irc %s: no conversation has a split point with %d context messages",
			dir, opt.MinContext)
	}
	return set, nil
}

// ubuntuAnnotationFiles lists dir's annotation files in byte order, checking each has its .ascii.txt.
func ubuntuAnnotationFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read ubuntu irc: %w", err)
	}
	var files []string
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".annotation.txt") {
			continue
		}
		ann := filepath.Join(dir, e.Name())
		if _, err := os.Stat(ubuntuASCIIPath(ann)); err != nil {
			return nil, fmt.Errorf("read ubuntu irc %s: its log %s is missing: %w",
				ann, filepath.Base(ubuntuASCIIPath(ann)), err)
		}
		files = append(files, ann)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read ubuntu irc %s: no *.annotation.txt file in the folder", dir)
	}
	return files, nil
}

func ubuntuASCIIPath(ann string) string {
	return strings.TrimSuffix(ann, ".annotation.txt") + ".ascii.txt"
}

// ubuntuConversations reads one annotation file and its log and returns the file's complete conversations
// (rules 1-3 above), ordered by first line, each with at least one kept message.
func ubuntuConversations(ann string) ([][]ubuntuMessage, error) {
	logPath := ubuntuASCIIPath(ann)
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return nil, fmt.Errorf("read ubuntu irc: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(raw) == 0 {
		lines = nil
	}
	links, err := readUbuntuLinks(ann, len(lines), filepath.Base(logPath))
	if err != nil {
		return nil, err
	}

	// Connected components by union-find over the linked lines; cutoff as in graph_to_cluster.py.
	parent := map[int]int{}
	var find func(int) int
	find = func(x int) int {
		p, ok := parent[x]
		if !ok {
			parent[x] = x
			return x
		}
		if p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	cutoff := -1
	for _, l := range links {
		ra, rb := find(l[0]), find(l[1])
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb) // the root is the component's first line
		}
		if src := max(l[0], l[1]); cutoff < 0 || src < cutoff {
			cutoff = src
		}
	}
	members := map[int][]int{}
	for x := range parent {
		r := find(x)
		members[r] = append(members[r], x)
	}
	roots := make([]int, 0, len(members))
	for r := range members {
		roots = append(roots, r)
	}
	sort.Ints(roots)

	var convs [][]ubuntuMessage
	for _, r := range roots {
		if r < cutoff { // reaches before the annotated part: possibly incomplete (rule 3)
			continue
		}
		ms := members[r]
		sort.Ints(ms)
		var conv []ubuntuMessage
		for _, n := range ms {
			m, keep, err := parseUbuntuLine(lines[n])
			if err != nil {
				return nil, fmt.Errorf("read ubuntu irc %s:%d (message %d): %w", logPath, n+1, n, err)
			}
			if keep {
				m.Line = n
				conv = append(conv, m)
			}
		}
		if len(conv) > 0 {
			convs = append(convs, conv)
		}
	}
	return convs, nil
}

// readUbuntuLinks parses the "i j -" lines of an annotation file; both ends must be lines of the log.
func readUbuntuLinks(ann string, nLines int, logName string) ([][2]int, error) {
	raw, err := os.ReadFile(ann)
	if err != nil {
		return nil, fmt.Errorf("read ubuntu irc: %w", err)
	}
	var links [][2]int
	for i, text := range strings.Split(string(raw), "\n") {
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", ann, i+1)
		if len(f) != 3 || f[2] != "-" {
			return nil, fmt.Errorf("read ubuntu irc %s: want a link \"i j -\", got %q", where, strings.TrimSpace(text))
		}
		var l [2]int
		for k := range l {
			n, err := strconv.Atoi(f[k])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("read ubuntu irc %s: want a link \"i j -\" of line numbers, got %q",
					where, strings.TrimSpace(text))
			}
			if n >= nLines {
				return nil, fmt.Errorf("read ubuntu irc %s: link %s %s names line %d, but %s has %d lines (0-%d)",
					where, f[0], f[1], n, logName, nLines, nLines-1)
			}
			l[k] = n
		}
		links = append(links, l)
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("read ubuntu irc %s: no links", ann)
	}
	return links, nil
}

// parseUbuntuLine reads one log line (rule 1). keep is false for system messages and messages with no text.
func parseUbuntuLine(line string) (m ubuntuMessage, keep bool, err error) {
	line = strings.TrimRight(line, "\r")
	if strings.HasPrefix(line, "=== ") || line == "===" {
		return m, false, nil
	}
	end := strings.Index(line, "] ")
	if !strings.HasPrefix(line, "[") || end < 0 {
		return m, false, fmt.Errorf("want \"[hh:mm] <nick> text\", \"[hh:mm]  * nick text\" or \"=== ...\", got %q", line)
	}
	rest := strings.TrimLeft(line[end+2:], " ")
	switch {
	case strings.HasPrefix(rest, "<"):
		close := strings.Index(rest, ">")
		if close < 2 {
			return m, false, fmt.Errorf("no speaker in %q", line)
		}
		m.Speaker, m.Text = rest[1:close], strings.TrimSpace(rest[close+1:])
	case strings.HasPrefix(rest, "* "):
		nick, text, _ := strings.Cut(strings.TrimLeft(rest[2:], " "), " ")
		if nick == "" {
			return m, false, fmt.Errorf("no speaker in action %q", line)
		}
		m.Speaker, m.Text = nick, strings.TrimSpace(text)
	default:
		return m, false, fmt.Errorf("want \"<nick> text\" or \"* nick text\" after the time, got %q", line)
	}
	return m, m.Text != "", nil
}

// ubuntuSplitPoints returns the valid split points of a conversation in ascending order (rule 5).
func ubuntuSplitPoints(c []ubuntuMessage, minContext int) []int {
	var out []int
	for k := max(minContext, 1); k < len(c); k++ {
		if !strings.EqualFold(c[k].Speaker, c[k-1].Speaker) {
			out = append(out, k)
		}
	}
	return out
}
