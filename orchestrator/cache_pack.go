package orchestrator

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The task cache's entries are small because most of an entry is one
// string (cacheEntry.data) packing its id, labels, round stats and usage,
// and its owner and sub-agent are indexes into one table of names: at a
// million tasks every byte of an entry is a megabyte
// (BenchmarkTaskIndexBytes measures it; docs/capacity.md).

// packEntry makes an entry's data: the id and the encoded labels, each
// after its length (uvarint), then the round count and each round's stats
// (uvarint flags and state, uvarint wait, varint run and start times),
// then the usage (a 0 byte for none).
func packEntry(id, labels string, rounds []roundStat, usage *UsageSum) string {
	b := make([]byte, 0, 8+len(id)+len(labels)+len(rounds)*14+12)
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	b = binary.AppendUvarint(b, uint64(len(labels)))
	b = append(b, labels...)
	b = binary.AppendUvarint(b, uint64(len(rounds)))
	for _, r := range rounds {
		b = binary.AppendUvarint(b, r.packed>>waitBits)
		b = binary.AppendUvarint(b, r.packed&(1<<waitBits-1))
		b = binary.AppendVarint(b, r.ranNS)
		b = binary.AppendVarint(b, r.startNS)
	}
	if usage == nil {
		return string(append(b, 0))
	}
	b = append(b, 1)
	b = binary.AppendVarint(b, int64(usage.Turns))
	// A cost's low bytes are mostly zero: reversed, it is a short uvarint.
	b = binary.AppendUvarint(b, bits.ReverseBytes64(math.Float64bits(usage.CostUSD)))
	b = binary.AppendVarint(b, usage.InputTokens)
	b = binary.AppendVarint(b, usage.OutputTokens)
	b = binary.AppendVarint(b, usage.CacheCreationInputTokens)
	b = binary.AppendVarint(b, usage.CacheReadInputTokens)
	return string(b)
}

// packed reads an entry's data; every read past the end gives zeros.
type packed struct{ s string }

func (p *packed) uvarint() uint64 {
	x, n := uvarint(p.s)
	if n <= 0 {
		p.s = ""
		return 0
	}
	p.s = p.s[n:]
	return x
}

func (p *packed) varint() int64 {
	ux := p.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (p *packed) str() string {
	n := p.uvarint()
	if n > uint64(len(p.s)) {
		p.s = ""
		return ""
	}
	s := p.s[:n]
	p.s = p.s[n:]
	return s
}

// id is the entry's task id (a part of its data, not a copy).
func (e *cacheEntry) id() string {
	p := packed{e.data}
	return p.str()
}

// key is the entry's place in the order.
func (e *cacheEntry) key() sortKey { return sortKey{e.at, e.id()} }

// labels is the entry's labels, as encodeLabels packs them.
func (e *cacheEntry) labels() string {
	p := packed{e.data}
	p.str()
	return p.str()
}

// roundsAndUsage appends the entry's round stats to rounds and fills
// usage, reporting whether it has any.
func (e *cacheEntry) roundsAndUsage(rounds []roundStat, usage *UsageSum) ([]roundStat, bool) {
	p := packed{e.data}
	p.str()
	p.str()
	for n := p.uvarint(); n > 0; n-- {
		flags := p.uvarint()
		wait := p.uvarint()
		rounds = append(rounds, roundStat{packed: flags<<waitBits | wait, ranNS: p.varint(), startNS: p.varint()})
	}
	if p.uvarint() == 0 {
		return rounds, false
	}
	*usage = UsageSum{Turns: int(p.varint()), CostUSD: math.Float64frombits(bits.ReverseBytes64(p.uvarint())),
		InputTokens: p.varint(), OutputTokens: p.varint(), CacheCreationInputTokens: p.varint(), CacheReadInputTokens: p.varint()}
	return rounds, true
}

// nameTable holds one copy of each owner and sub-agent name the entries
// use, by index (0 is ""). The list only grows, so an index read under
// the cache's lock names the same string after it (a snapshot encodes
// outside the lock); a name no entry uses any more leaves the lookup, and
// comes back under a new index.
type nameTable struct {
	idx  map[string]uint32
	list []string
	refs []int32
}

func newNameTable() nameTable {
	return nameTable{idx: map[string]uint32{}, list: []string{""}, refs: []int32{0}}
}

// intern returns name's index, counting one more use.
func (t *nameTable) intern(name string) uint32 {
	if name == "" {
		return 0
	}
	i, ok := t.idx[name]
	if !ok {
		i = uint32(len(t.list))
		t.list = append(t.list, name)
		t.refs = append(t.refs, 0)
		t.idx[name] = i
	}
	t.refs[i]++
	return i
}

// release counts one use fewer of index i.
func (t *nameTable) release(i uint32) {
	if i == 0 || int(i) >= len(t.refs) {
		return
	}
	if t.refs[i]--; t.refs[i] <= 0 {
		delete(t.idx, t.list[i])
	}
}

// lookup is name's index; false when no entry uses it.
func (t *nameTable) lookup(name string) (uint32, bool) {
	if name == "" {
		return 0, true
	}
	i, ok := t.idx[name]
	return i, ok
}

func (t *nameTable) name(i uint32) string { return t.list[i] }
