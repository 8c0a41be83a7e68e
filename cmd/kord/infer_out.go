package main

import (
	"bufio"
	"encoding/json"
	"os"

	"github.com/kord-fss/kord/infer"
)

// inferOutput is one line of `kord infer demo --out FILE`: an image's
// index, the class the client (party 1) reads from its logits, and the
// logits themselves, as party 1 reconstructed them.
type inferOutput struct {
	Index  int     `json:"index"`
	Class  int     `json:"class"`
	Logits []int64 `json:"logits"`
}

// outputFile is --out FILE: a new file (an existing one is refused, so
// that no earlier run's answers are lost) that gets one JSON line per
// image. write is the demos' Output hook; done flushes and closes.
type outputFile struct {
	f *os.File
	w *bufio.Writer
	e *json.Encoder
	n int // lines written
}

func createOutput(path string) (*outputFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if os.IsExist(err) {
			return nil, badInput("--out %s already exists: give a new file", path)
		}
		return nil, badInput("--out: %v", err)
	}
	w := bufio.NewWriter(f)
	return &outputFile{f: f, w: w, e: json.NewEncoder(w)}, nil
}

func (o *outputFile) write(index int, logits []int64) error {
	o.n++
	return o.e.Encode(inferOutput{Index: index, Class: infer.Argmax(logits), Logits: logits})
}

// done flushes and closes the file; a run that failed before any image
// (runErr, bad flags among them) leaves no file.
func (o *outputFile) done(runErr error) error {
	err := o.w.Flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if runErr != nil && o.n == 0 {
		os.Remove(o.f.Name())
	}
	return err
}
