package gen

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// LineUnit is one transcript as the indexer hands it to consumers: each
// complete line starting with '{' (spaces trimmed) and the offset it starts at.
type LineUnit struct {
	Ref   indexer.UnitRef
	Offs  []int64
	Lines [][]byte
}

// SplitLines cuts data into the lines the indexer would hand over for ref; a
// partial last line is not handed over.
func SplitLines(ref indexer.UnitRef, data []byte) LineUnit {
	u := LineUnit{Ref: ref}
	off := int64(0)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(data[:i]); len(line) > 0 && line[0] == '{' {
			u.Offs = append(u.Offs, off)
			u.Lines = append(u.Lines, line)
		}
		off += int64(i + 1)
		data = data[i+1:]
	}
	return u
}

// LineUnits writes, under home, a store of spec for each line layout (wave,
// claude, codex, gemini, llxprt; seeds 1 to 5, one source per layout named after
// it) and returns its transcripts as units, source by source. Units get device 1
// and distinct inode numbers.
func LineUnits(home string, spec Spec) ([]LineUnit, error) {
	var out []LineUnit
	for i, layout := range []string{"wave", "claude", "codex", "gemini", "llxprt"} {
		root := filepath.Join(home, layout)
		sp := spec
		sp.Layout, sp.Seed, sp.Home = layout, int64(i+1), home
		st, err := Plan(root, sp)
		if err != nil {
			return nil, err
		}
		if err := st.Write(); err != nil {
			return nil, err
		}
		for j, s := range st.Sessions {
			p := st.Path(s)
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, SplitLines(indexer.UnitRef{Source: layout, Layout: layout, Unit: filepath.ToSlash(rel), Path: p, Dev: 1, Ino: uint64(i*1000 + j)}, data))
		}
	}
	return out, nil
}

// Hand resets u in consumer c and hands it u's lines as the indexer would: one
// Line call each, or (prepared) through c's Preparer as a read worker does,
// each line whole or as its members scanned once (members). c must be an
// indexer.Preparer when prepared is set.
func (u LineUnit) Hand(c indexer.Consumer, prepared, members bool) {
	c.Reset(u.Ref)
	if !prepared {
		for j, line := range u.Lines {
			c.Line(u.Ref, u.Offs[j], line)
		}
		return
	}
	pr := c.(indexer.Preparer)
	p := pr.Prepare(u.Ref)
	var m indexer.Members
	for j, line := range u.Lines {
		if members {
			m.Scan(line)
			p.(indexer.MembersPrepared).LineMembers(u.Offs[j], &m)
		} else {
			p.Line(u.Offs[j], line)
		}
	}
	pr.LinesPrepared(u.Ref, p)
}
