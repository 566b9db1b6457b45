package system

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// serveProfiles answers /debug/pprof/: the index of runtime/pprof's
// profiles, each by name (?debug=N for text, as go tool pprof and
// net/http/pprof take it), and profile?seconds=N, a CPU profile.
//
// Written here, not imported from net/http/pprof: that package's init
// registers its handlers on http.DefaultServeMux, so a program built on
// ether9 that serves the default mux would hand every profile to the
// network with no token asked (TestNoDefaultMuxHandlers, root package).
// It also cost 10 ms of TCG time at every boot, in its init.
func serveProfiles(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
	switch name {
	case "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, p := range pprof.Profiles() {
			fmt.Fprintf(w, "%d %s\n", p.Count(), p.Name())
		}
		fmt.Fprintln(w, "- profile (CPU, ?seconds=N)")
		return
	case "profile":
		serveCPUProfile(w, r)
		return
	}
	p := pprof.Lookup(name)
	if p == nil {
		http.Error(w, "no profile "+strconv.Quote(name), http.StatusNotFound)
		return
	}
	debug, _ := strconv.Atoi(r.FormValue("debug"))
	if name == "heap" && r.FormValue("gc") != "" {
		runtime.GC()
	}
	setProfileType(w, name, debug)
	p.WriteTo(w, debug)
}

// serveCPUProfile profiles the CPU for ?seconds=N (30 by default, at
// most the server's body time) or until the client goes.
func serveCPUProfile(w http.ResponseWriter, r *http.Request) {
	secs, err := strconv.Atoi(r.FormValue("seconds"))
	if r.FormValue("seconds") == "" {
		secs, err = 30, nil
	}
	if err != nil || secs <= 0 || time.Duration(secs)*time.Second > httpBodyTime {
		http.Error(w, fmt.Sprintf("seconds %q: want 1..%.0f", r.FormValue("seconds"), httpBodyTime.Seconds()), http.StatusBadRequest)
		return
	}
	setProfileType(w, "profile", 0)
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Header().Del("Content-Disposition")
		http.Error(w, "cpu profile: "+err.Error(), http.StatusConflict)
		return
	}
	t := time.NewTimer(time.Duration(secs) * time.Second)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	pprof.StopCPUProfile()
}

// setProfileType says what a profile's answer holds: text for debug
// above 0, else the gzipped protocol buffer go tool pprof reads.
func setProfileType(w http.ResponseWriter, name string, debug int) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if debug > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
}
