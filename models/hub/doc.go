// Package hub turns a model reference into a local directory holding
// HuggingFace files (config.json, model.safetensors or pytorch_model.bin and
// the tokenizer files).
//
// A reference is tried, in order, as
//
//  1. a local folder holding config.json, returned as is;
//  2. a snapshot in the standard HuggingFace cache (HF_HUB_CACHE, else
//     $HF_HOME/hub, else ~/.cache/huggingface/hub), so weights already fetched
//     with the Python tools are reused without any network request;
//  3. a download from the hub (HF_ENDPOINT) into that same cache, in the same
//     layout the Python tools write: blobs named by ETag, snapshots/<commit>
//     holding symlinks into ../../blobs, refs/<revision> holding the commit.
//
// Downloads resume from blobs/<etag>.incomplete with an HTTP Range request.
// Every blob is checked by hash: LFS files against their sha256, files kept
// in git against their git blob SHA-1. Ranks or processes sharing a cache
// download each blob once: an exclusive flock on .locks/<repo>/<etag>.lock
// (where huggingface_hub puts its own) admits one downloader, the others
// wait and then verify. Connections and silences are bounded by
// ConnectTimeout and IdleTimeout. When nothing is found and the hub
// cannot be used (HF_HUB_OFFLINE=1, or the endpoint is unreachable) Resolve
// returns one *NotFoundError naming every place it looked.
package hub
