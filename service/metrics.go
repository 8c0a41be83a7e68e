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
}

func newMetrics(reg prometheus.Registerer, party int) *metrics {
	cl := prometheus.Labels{"party": string(rune('0' + party))}
	m := &metrics{
		keys: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kord_keys_emitted_total",
			Help: "Key shares delivered to applications, by key type and mode.", ConstLabels: cl}, []string{"type", "mode"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kord_rejects_total",
			Help: "Rejected requests, frames and batches, by class.", ConstLabels: cl}, []string{"class"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kord_in_flight_batches",
			Help: "Batches sent to the peer and not yet answered.", ConstLabels: cl}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kord_pending_requests",
			Help: "Application requests waiting to be batched or matched.", ConstLabels: cl}),
		next: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kord_module_next_counter",
			Help: "The module's next counter (after the last batch or resync).", ConstLabels: cl}),
		floor: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kord_module_peer_floor",
			Help: "The module's replay high-water mark.", ConstLabels: cl}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kord_resyncs_total",
			Help: "Witness exchanges (session starts) with the peer.", ConstLabels: cl}),
		rollbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "kord_rollbacks_detected_total",
			Help: "Witness exchanges in which this module found its state older than its peer knew.", ConstLabels: cl}),
		frameBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kord_frame_bytes_sent_total",
			Help: "Frame bytes sent to the peer, by tier.", ConstLabels: cl}, []string{"tier"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "kord_rounds_total",
			Help: "Batch exchanges with the peer (one round each).", ConstLabels: cl}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: "kord_batches_total",
			Help: "Batches delivered.", ConstLabels: cl}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{Name: "kord_keys_recovered_total",
			Help: "Key shares generated before a party restart and delivered after it (re-collected from the module, or held and settled).", ConstLabels: cl}),
	}
	if reg != nil {
		reg.MustRegister(m.keys, m.rejects, m.inFlight, m.pending, m.next, m.floor, m.resyncs, m.rollbacks, m.frameBytes, m.rounds, m.batches, m.recovered)
	}
	return m
}
