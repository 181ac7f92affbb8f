// Package promidle exports what the idle stepper of package gcstep did
// (cycles run and declined, memory returned to the operating system, the
// CPU budget earned and spent, the prices it learned) as Prometheus
// metrics.
//
//	rt := gcstep.NewRuntime() // one per process
//	defer rt.Close()
//	prometheus.MustRegister(promidle.NewCollector(rt, ""))
//	http.Handle("/metrics", promhttp.Handler())
//
// The package is a module of its own, so that the idlemux module does not
// depend on the Prometheus client. A program that uses expvar instead
// needs neither: it publishes gcstep.Runtime.Var.
package promidle
