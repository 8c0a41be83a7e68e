package main

import (
	"encoding/json"
	"io"
)

// writeIndented prints v as indented JSON, as every --json report does.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// textReport is a report that can print itself as text.
type textReport interface{ WriteText(io.Writer) }

// writeReport prints rep as indented JSON (asJSON) or as its text.
func writeReport(w io.Writer, asJSON bool, rep textReport) error {
	if asJSON {
		return writeIndented(w, rep)
	}
	rep.WriteText(w)
	return nil
}
