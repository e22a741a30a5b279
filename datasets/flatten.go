package datasets

import "strings"

// Role tokens mark who speaks each utterance of a flattened dialogue, as TOD-BERT (Wu et al. 2020, §2.2:
// "[USR]" and "[SYS]") and FutureTOD (§2.1: "[CLS] [USR] u1 [SYS] s1 ...") do. They are added to the
// tokenizer as special tokens, so they are never split, lower-cased or masked.
const (
	UserToken   = "[USR]"
	SystemToken = "[SYS]"
)

// RoleTokens are the tokens FlattenTurns writes with the default options, in a fixed order (the order
// they are added to a tokenizer in, which fixes their ids).
func RoleTokens() []string { return []string{UserToken, SystemToken} }

// FlattenOptions say how turns become one text. Empty tokens take the defaults above.
type FlattenOptions struct {
	User, System string
}

func (o FlattenOptions) role(s Speaker) string {
	if s == System {
		if o.System == "" {
			return SystemToken
		}
		return o.System
	}
	if o.User == "" {
		return UserToken
	}
	return o.User
}

// FlattenTurns writes turns as "[USR] u1 [SYS] s1 [USR] u2 ...": each utterance after its speaker's role
// token, separated by single spaces, texts trimmed. The tokenizer adds [CLS] (and [SEP]) around it.
func FlattenTurns(turns []Turn, opt FlattenOptions) string {
	var b strings.Builder
	for _, t := range turns {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(opt.role(t.Speaker))
		if text := strings.TrimSpace(t.Text); text != "" {
			b.WriteByte(' ')
			b.WriteString(text)
		}
	}
	return b.String()
}
