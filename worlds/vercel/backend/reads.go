package backend

import (
	"fmt"
	"net/http"
	"slices"
)

// The entity reads the published runtime (@workflow/core 4.8.9 on
// world-vercel 4.7.4's storage) makes beside the events: a run's state
// (runs.get: its status, output or error) and a hook by its token
// (hooks.getByToken, by resumeHook). Both answer from the run's events as
// the store holds them, folded as a write folds them: the backend keeps no
// entity apart from its events.

// getRun: GET /api/v2/runs/{runId}?remoteRefBehavior=lazy|resolve, the run
// as world-vercel's WorkflowRun wire form has it; lazy leaves out its input
// and output (the real backend answers refs there, which the package
// drops). A run without run_created is not found (404), as world-local.
func (t *Tenant) getRun(w http.ResponseWriter, r *http.Request) {
	runID := r.PathValue("runId")
	_, evs, err := t.events(r.Context(), runID)
	if err != nil {
		fail(w, r, err)
		return
	}
	run := fold(runID, evs).runEntity()
	if run == nil {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("Workflow run %q not found", runID))
		return
	}
	if r.URL.Query().Get("remoteRefBehavior") == "lazy" {
		delete(run, "input")
		delete(run, "output")
	}
	writeCBOR(w, run)
}

// getHookByToken: GET /api/v2/hooks/by-token?token=, the live hook holding
// the token (404 when none: never created, disposed of, or its run ended).
// Tokens are unique per run here (see the package doc), so the tenant
// remembers which runs a hook_created named each token in, and reads each
// of those runs' events: the answer is the store's, the memory only says
// where to look.
func (t *Tenant) getHookByToken(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if token == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	t.mu.Lock()
	runs := slices.Clone(t.tokenRuns[token])
	t.mu.Unlock()
	for _, runID := range slices.Backward(runs) {
		_, evs, err := t.events(r.Context(), runID)
		if err != nil {
			fail(w, r, err)
			return
		}
		st := fold(runID, evs)
		if corr, ok := st.tokens[token]; ok {
			writeCBOR(w, st.hookEntity(corr, t.cfg.Project))
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("Hook with token %q not found", token))
}

// noteToken remembers that run runID may hold a hook of token.
func (t *Tenant) noteToken(token, runID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.tokenRuns[token], runID) {
		t.tokenRuns[token] = append(t.tokenRuns[token], runID)
	}
}

// writeCBOR answers 200 with v in CBOR.
func writeCBOR(w http.ResponseWriter, v any) {
	b, err := Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
