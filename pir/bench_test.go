package pir

import (
	"context"
	"errors"
	"testing"
)

// TestBenchRejectsBadShape: a bad configuration is an error before any
// allocation (a negative record count used to panic in make).
func TestBenchRejectsBadShape(t *testing.T) {
	for _, c := range []struct {
		cfg  BenchConfig
		want error
	}{
		{BenchConfig{Records: -1, RecordSize: 16, Batch: 1}, ErrCount},
		{BenchConfig{Records: 0, RecordSize: 16, Batch: 1}, ErrCount},
		{BenchConfig{Records: MaxRecords + 1, RecordSize: 16, Batch: 1}, ErrCount},
		{BenchConfig{Records: 8, RecordSize: -16, Batch: 1}, ErrRecordSize},
		{BenchConfig{Records: 8, RecordSize: 16, Batch: 0}, nil},
		{BenchConfig{Records: 8, RecordSize: 16, Batch: MaxKeysPerRequest + 1}, nil},
	} {
		_, err := Bench(context.Background(), c.cfg)
		if err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.cfg, err, c.want)
		}
	}
}
