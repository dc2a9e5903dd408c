package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sort"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// cmdExport prints the records of the hyperyolo store(s) as one JSON object, read
// from the store file itself (not the catalog), in HyperYOLO's own format: a
// backup that `cp` could restore. Without --source every enabled hyperyolo source
// is read; a record id found in two stores with different values is an error.
func cmdExport(e *env, args []string) error {
	fs := newFlags(e, "export", "sessionwatch export [--source S] > records.json   (example: sessionwatch export --source hyperyolo)")
	source := fs.String("source", "", "only this hyperyolo source")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("example: sessionwatch export > records.json", "export: unexpected argument %q", pos[0])
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	srcs, err := exportSources(cfg, *source)
	if err != nil {
		return err
	}
	merged := map[string]json.RawMessage{}
	from := map[string]string{}
	var order []string
	for _, src := range srcs {
		recs, keys, err := readStoreForExport(src)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if prev, dup := from[k]; dup {
				if !sameJSON(merged[k], recs[k]) {
					return failErr("export one source at a time with --source", "export: record %s differs between sources %s and %s", k, prev, src.Name)
				}
				continue
			}
			from[k] = src.Name
			merged[k] = recs[k]
			order = append(order, k)
		}
	}
	out, err := indexer.EncodeHyperyoloStore(merged, order)
	if err != nil {
		return failErr("", "export: %v", err)
	}
	out = append(out, '\n')
	_, err = e.stdout.Write(out)
	return err
}

// exportSources picks the hyperyolo sources to export: the named one, or every
// enabled one.
func exportSources(cfg *config.Config, name string) ([]config.Source, error) {
	var out []config.Source
	for _, src := range cfg.Sources {
		switch {
		case name != "" && src.Name == name:
			if src.Layout != config.LayoutHyperyolo {
				return nil, usageErr("export reads hyperyolo stores only", "export: source %q has layout %s, not hyperyolo", name, src.Layout)
			}
			return []config.Source{src}, nil
		case name == "" && src.Enabled && src.Layout == config.LayoutHyperyolo:
			out = append(out, src)
		}
	}
	if name != "" {
		return nil, usageErr("see 'sessionwatch config show' for the sources", "export: unknown source %q", name)
	}
	if len(out) == 0 {
		return nil, failErr(`add a source with "layout":"hyperyolo" to the config`, "export: no enabled hyperyolo source")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readStoreForExport reads one store (once), with its keys in file order.
func readStoreForExport(src config.Source) (map[string]json.RawMessage, []string, error) {
	data, err := os.ReadFile(src.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, failErr("check the source's \"root\" in the config ('sessionwatch config show')",
			"export: hyperyolo store %s does not exist (source %s)", src.Root, src.Name)
	}
	if err != nil {
		return nil, nil, failErr("", "export: read hyperyolo store of source %s: %v", src.Name, err)
	}
	recs, keys, err := indexer.DecodeHyperyoloStore(data)
	if err != nil {
		return nil, nil, failErr("the store may be corrupt; HyperYOLO writes it atomically, so try again and repair the file if this persists",
			"export: hyperyolo store %s is not valid (source %s): %v", src.Root, src.Name, err)
	}
	return recs, keys, nil
}

// sameJSON reports whether two JSON values are equal ignoring insignificant space.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
