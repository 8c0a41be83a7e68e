package service

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a party's Prometheus series. None carries a secret.
type metrics struct {
	keys       *prometheus.CounterVec // by type and mode
	rejects    *prometheus.CounterVec // by class
	inFlight   prometheus.Gauge
	pending    prometheus.Gauge
	next       prometheus.Gauge
	floor      prometheus.Gauge
	resyncs    prometheus.Counter
	rollbacks  prometheus.Counter
	frameBytes *prometheus.CounterVec // by tier
	rounds     prometheus.Counter
	batches    prometheus.Counter
	recovered  prometheus.Counter
	// slabsHanded: messages whose keys went to the application as the
	// sealed memfd they are in (slabhand.go).
	slabsHanded prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, party int) *metrics {
	cl := prometheus.Labels{"party": string(rune('0' + party))}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, labels)
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: cl})
	}
	m := &metrics{
		keys:       counterVec("kord_keys_emitted_total", "Key shares delivered to applications, by key type and mode.", "type", "mode"),
		rejects:    counterVec("kord_rejects_total", "Rejected requests, frames and batches, by class.", "class"),
		inFlight:   gauge("kord_in_flight_batches", "Batches sent to the peer and not yet answered."),
		pending:    gauge("kord_pending_requests", "Application requests waiting to be batched or matched."),
		next:       gauge("kord_module_next_counter", "The module's next counter (after the last batch or resync)."),
		floor:      gauge("kord_module_peer_floor", "The module's replay high-water mark."),
		resyncs:    counter("kord_resyncs_total", "Witness exchanges (session starts) with the peer."),
		rollbacks:  counter("kord_rollbacks_detected_total", "Witness exchanges in which this module found its state older than its peer knew."),
		frameBytes: counterVec("kord_frame_bytes_sent_total", "Frame bytes sent to the peer, by tier.", "tier"),
		rounds:     counter("kord_rounds_total", "Batch exchanges with the peer (one round each)."),
		batches:    counter("kord_batches_total", "Batches delivered."),
		recovered: counter("kord_keys_recovered_total",
			"Key shares generated before a party restart and delivered after it (re-collected from the module, or held and settled)."),
		slabsHanded: counter("kord_slabs_handed_total",
			"Messages whose keys went to a same-host application as the sealed memfd the module wrote them into, instead of as bytes."),
	}
	if reg != nil {
		reg.MustRegister(m.keys, m.rejects, m.inFlight, m.pending, m.next, m.floor, m.resyncs, m.rollbacks, m.frameBytes, m.rounds, m.batches, m.recovered, m.slabsHanded)
	}
	return m
}
