package torchbin

import (
	"archive/zip"
	"bytes"
	"convrep/internal/shared"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// pk writes pickle opcodes by hand: the tests need hostile and damaged
// pickles that no real writer would produce.
type pk struct{ bytes.Buffer }

func (p *pk) op(b ...byte) *pk { p.Write(b); return p }
func (p *pk) proto(v byte) *pk { return p.op(0x80, v) }
func (p *pk) stop() *pk        { return p.op('.') }
func (p *pk) mark() *pk        { return p.op('(') }
func (p *pk) tuple() *pk       { return p.op('t') }
func (p *pk) reduce() *pk      { return p.op('R') }
func (p *pk) global(module, name string) *pk {
	p.WriteByte('c')
	p.WriteString(module + "\n" + name + "\n")
	return p
}
func (p *pk) str(s string) *pk {
	p.WriteByte('X')
	p.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s))))
	p.WriteString(s)
	return p
}
func (p *pk) int(v int) *pk {
	if v != int(int32(v)) {
		p.op(0x8a, 8) // LONG1 of 8 bytes
		p.Write(binary.LittleEndian.AppendUint64(nil, uint64(v)))
		return p
	}
	p.WriteByte('J')
	p.Write(binary.LittleEndian.AppendUint32(nil, uint32(int32(v))))
	return p
}
func (p *pk) ints(vs ...int) *pk {
	p.mark()
	for _, v := range vs {
		p.int(v)
	}
	return p.tuple()
}

// emptyOrderedDict pushes collections.OrderedDict(), as torch pickles the
// backward_hooks argument.
func (p *pk) emptyOrderedDict() *pk {
	return p.global("collections", "OrderedDict").op(')').reduce()
}

// spec describes one state-dict entry for statePickle.
type spec struct {
	name, class, key string
	numel            int
	offset           int
	size, stride     []int
}

// storageID pushes a persistent id; legacy ids carry a sixth entry (None).
func (p *pk) storageID(s spec, legacy bool) *pk {
	p.mark().str("storage").global("torch", s.class).str(s.key).str("cpu").int(s.numel)
	if legacy {
		p.op('N')
	}
	return p.tuple().op('Q')
}

// tensor pushes _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()).
func (p *pk) tensor(s spec, legacy bool) *pk {
	p.global("torch._utils", "_rebuild_tensor_v2").mark()
	p.storageID(s, legacy).int(s.offset).ints(s.size...).ints(s.stride...).op(0x89).emptyOrderedDict()
	return p.tuple().reduce()
}

// statePickle returns the pickle of a plain dict of the given tensors, laid
// out as torch.save writes it (protocol 2, one SETITEMS).
func statePickle(specs []spec, legacy bool) []byte {
	var p pk
	p.proto(2).op('}').mark()
	for _, s := range specs {
		p.str(s.name).tensor(s, legacy)
	}
	return p.op('u').stop().Bytes()
}

type record struct {
	name string
	data []byte
}

// zipBytes builds an archive; deflate chooses the compression of every record.
func zipBytes(t testing.TB, records []record, deflate bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	method := zip.Store
	if deflate {
		method = zip.Deflate
	}
	for _, r := range records {
		f, err := w.CreateHeader(&zip.FileHeader{Name: r.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkpoint builds a zip checkpoint from a data.pkl and storages keyed
// "0", "1", ... under archive/.
func checkpoint(t testing.TB, pkl []byte, storages ...[]byte) []byte {
	recs := []record{{"archive/data.pkl", pkl}}
	for i, s := range storages {
		recs = append(recs, record{"archive/data/" + string(rune('0'+i)), s})
	}
	recs = append(recs, record{"archive/version", []byte("3\n")})
	return zipBytes(t, recs, false)
}

// legacyBytes builds a pre-1.6 checkpoint: magic, protocol, system info,
// the state-dict pickle, the key list and each storage (count + bytes).
func legacyBytes(stateDict []byte, keys []string, storages [][]byte, elem []int) []byte {
	var out bytes.Buffer
	var magic pk
	magic.proto(2).op(0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19).stop()
	out.Write(magic.Bytes())
	var proto pk
	out.Write(proto.proto(2).op('M', 0xe9, 0x03).stop().Bytes())
	var sys pk
	sys.proto(2).op('}').mark().str("protocol_version").int(1001).str("little_endian").op(0x88)
	sys.str("type_sizes").op('}').mark().str("short").int(2).str("int").int(4).str("long").int(8).op('u')
	out.Write(sys.op('u').stop().Bytes())
	out.Write(stateDict)
	var kl pk
	kl.proto(2).op(']').mark()
	for _, k := range keys {
		kl.str(k)
	}
	out.Write(kl.op('e').stop().Bytes())
	for i, s := range storages {
		out.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s)/elem[i])))
		out.Write(s)
	}
	return out.Bytes()
}

// writeTemp writes b to a file in a fresh temporary directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// le builds little-endian bytes from values of one fixed-size type.
func le(vs any) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, vs)
	if err != nil {
		panic(err)
	}
	return b
}

// fixtures is ../shared/fixtures; a missing folder fails the test.
func fixtures(t testing.TB) string { return shared.MustPath(t, "fixtures") }
