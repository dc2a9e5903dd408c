package indexer

import (
	"bytes"
)

// ReadCatalogsPicked is ReadCatalogs for a caller that needs a few sessions out of
// each catalog (search results): a catalog in the one-session-per-line form has
// only its lines that hold one of needles, as a JSON string written the way the
// catalogs write them, decoded (other catalogs are decoded whole). The sessions
// returned are a superset of those whose file or id is a needle; callers match
// them as they would ReadCatalogs'.
func ReadCatalogsPicked(stateDir string, sources, projects, needles []string) ([]Entry, error) {
	var p CatalogPicker
	return p.Read(stateDir, sources, projects, needles)
}

// CatalogPicker is ReadCatalogsPicked for several calls (one per project): every
// catalog is read through the same two buffers, so that a short-lived process
// does not fault in fresh pages for each. The sessions returned own their
// strings.
type CatalogPicker struct{ buf, data []byte }

// Read is ReadCatalogsPicked.
func (p *CatalogPicker) Read(stateDir string, sources, projects, needles []string) ([]Entry, error) {
	quoted := map[string]bool{}
	for _, n := range needles {
		quoted[string(appendJSONString(nil, n))] = true
	}
	read := func(path string) (*Catalog, error) {
		var err error
		if p.data, err = readFileInto(p.data, path); err != nil {
			return nil, err
		}
		picked := pickCatalogLines(p.buf[:0], p.data, quoted)
		if picked == nil {
			return decodeCatalogSummaries(path, p.data)
		}
		p.buf = picked
		return decodeCatalogSummaries(path, picked)
	}
	return readCatalogs(stateDir, sources, projects, read)
}

// pickCatalogLines appends to out the catalog data with only the session lines
// whose file is a needle (JSON-quoted; commas mended), or returns nil if data is
// not in the one-session-per-line form.
func pickCatalogLines(out, data []byte, needles map[string]bool) []byte {
	head, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || !bytes.HasSuffix(head, []byte(`"sessions":[`)) {
		return nil
	}
	out = append(append(out, head...), '\n')
	kept := false
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if string(line) == "]}" {
			if len(bytes.TrimSpace(rest)) != 0 {
				return nil
			}
			return append(out, "]}\n"...)
		}
		line = bytes.TrimSuffix(line, []byte(","))
		if v, ok := fileValue(line); !ok || needles[string(v)] {
			if kept {
				out = append(out[:len(out)-1], ",\n"...)
			}
			out = append(append(out, line...), '\n')
			kept = true
		}
	}
	return nil
}

// fileValue is the JSON string (quotes included) of a session line's "file" key,
// which is a key wherever `"file":` occurs (inside a string its quotes would be
// escaped). ok is false if the line has none.
func fileValue(line []byte) ([]byte, bool) {
	i := bytes.Index(line, []byte(`"file":`))
	if i < 0 {
		return nil, false
	}
	v := line[i+len(`"file":`):]
	if len(v) == 0 || v[0] != '"' {
		return nil, false
	}
	for j := 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return v[:j+1], true
		}
	}
	return nil, false
}
