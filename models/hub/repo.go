package hub

import (
	"fmt"
	"regexp"
	"strings"
)

// repoIDPattern is the hub's rule for model ids: "name" or "org/name", each
// part starting with a letter or digit.
var repoIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// validRepoID reports whether ref can name a hub repository. The hub also
// forbids "--" (it separates parts in cache folder names) and "..".
func validRepoID(ref string) bool {
	return len(ref) <= 96 && repoIDPattern.MatchString(ref) &&
		!strings.Contains(ref, "--") && !strings.Contains(ref, "..")
}

// repoFolderName is the cache folder of a model repo: "org/name" becomes
// "models--org--name", a short name "bert-base-uncased" becomes
// "models--bert-base-uncased".
func repoFolderName(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

// commitPattern matches a full git commit hash, the only form the hub sends in
// X-Repo-Commit and the only one used as a snapshot folder name.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkRevision rejects revisions that would escape refs/ when used as a path.
// Branch names such as "refs/pr/1" keep their slashes, like the Python tools.
func checkRevision(rev string) error {
	for _, part := range strings.Split(rev, "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsAny(part, `\`+"\x00") {
			return fmt.Errorf("hub: invalid revision %q", rev)
		}
	}
	return nil
}

// etagPattern limits an ETag to characters safe in a file name; it is used as
// the blob's name.
var etagPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+=-]*$`)

// sha256Pattern matches an LFS ETag, the hex sha256 of the file's content.
var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// sha1Pattern matches the ETag of a file stored in git: its blob SHA-1.
var sha1Pattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// normalizeETag strips the weak marker and quotes a server puts around an
// ETag.
func normalizeETag(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "W/")
	return strings.Trim(v, `"`)
}
