package models

import (
	"context"

	"convrep/models/hub"
)

// LoadPretrained resolves ref (a folder, or a hub name such as bert-base-uncased or org/name, found in the
// HuggingFace cache or downloaded into it) and loads it. It returns the folder too, for the tokenizer files.
func LoadPretrained(ctx context.Context, ref string, hubOpt hub.Options, opt LoadOptions) (*Model, string, error) {
	if hubOpt.Logger == nil {
		hubOpt.Logger = opt.Logger
	}
	dir, err := hub.Resolve(ctx, ref, hubOpt)
	if err != nil {
		return nil, "", err
	}
	m, err := Load(dir, opt)
	return m, dir, err
}
