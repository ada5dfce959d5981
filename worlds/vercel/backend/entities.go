package backend

// The entities a POST answer carries beside its event (world-vercel reads
// run on run_created and run_started, step on step_started), as the
// backend materializes them from the run's events.

// payloadOf is an event's payload as an entity field: its bytes, or its
// StructuredError decoded.
func payloadOf(e *Event) any {
	if e == nil || len(e.Body) == 0 {
		return nil
	}
	if structuredError[e.Meta.EventType] {
		var v any
		if Unmarshal(e.Body, &v) == nil {
			return v
		}
	}
	return e.Body
}

// put sets k to v in m unless v is nil.
func put(m map[string]any, k string, v any) {
	if v != nil {
		m[k] = v
	}
}

// runEntity is the run as world-vercel's WorkflowRun has it (nil before
// run_created).
func (st *runState) runEntity() map[string]any {
	c := st.created
	if c == nil {
		return nil
	}
	out := map[string]any{
		"runId": st.runID, "status": st.status, "deploymentId": c.Meta.DeploymentID, "workflowName": c.Meta.WorkflowName,
		"specVersion": c.Meta.SpecVersion, "createdAt": c.CreatedAt, "updatedAt": st.updatedAt,
	}
	put(out, "input", payloadOf(c))
	if c.Meta.ExecutionContext != nil {
		out["executionContext"] = c.Meta.ExecutionContext
	}
	if st.started != nil {
		out["startedAt"] = st.started.CreatedAt
	}
	if t := st.terminal; t != nil {
		out["completedAt"] = t.CreatedAt
		switch t.Meta.EventType {
		case "run_completed":
			put(out, "output", payloadOf(t))
		case "run_failed":
			put(out, "error", payloadOf(t))
			if t.Meta.ErrorCode != "" {
				out["errorCode"] = t.Meta.ErrorCode
			}
		}
	}
	return out
}

// stepEntity is a step as world-vercel's Step wire form has it.
func (st *runState) stepEntity(corr string) map[string]any {
	s := st.steps[corr]
	if s == nil {
		return nil
	}
	out := map[string]any{
		"runId": st.runID, "stepId": corr, "stepName": s.created.Meta.StepName, "status": s.status, "attempt": s.attempt,
		"specVersion": s.created.Meta.SpecVersion, "createdAt": s.created.CreatedAt, "updatedAt": s.updatedAt,
	}
	put(out, "input", payloadOf(&s.created))
	if s.startedAt != nil {
		out["startedAt"] = *s.startedAt
	}
	if s.completedAt != nil {
		out["completedAt"] = *s.completedAt
	}
	if s.retryAfter != nil {
		out["retryAfter"] = *s.retryAfter
	}
	if s.last != nil {
		if s.last.Meta.EventType == "step_completed" {
			put(out, "output", payloadOf(s.last))
		} else {
			put(out, "error", payloadOf(s.last))
		}
	}
	return out
}

// hookEntity is a hook as world-vercel's Hook has it.
func (st *runState) hookEntity(corr, project string) map[string]any {
	h := st.hooks[corr]
	if h == nil || h.created.Meta.EventType != "hook_created" {
		return nil
	}
	m := h.created.Meta
	out := map[string]any{
		"runId": st.runID, "hookId": corr, "token": m.HookToken, "ownerId": project, "projectId": project,
		"environment": "production", "createdAt": h.created.CreatedAt, "specVersion": m.SpecVersion,
		"isWebhook": m.HookIsWebhook != nil && *m.HookIsWebhook,
	}
	put(out, "metadata", payloadOf(&h.created))
	return out
}

// waitEntity is a wait as @workflow/world's Wait has it.
func (st *runState) waitEntity(corr string) map[string]any {
	w := st.waits[corr]
	if w == nil {
		return nil
	}
	out := map[string]any{
		"waitId": st.runID + "-" + corr, "runId": st.runID, "status": "waiting",
		"createdAt": w.created.CreatedAt, "updatedAt": w.created.CreatedAt, "specVersion": w.created.Meta.SpecVersion,
	}
	put(out, "resumeAt", timeOf(w.created.Meta.ResumeAt))
	if w.completed != nil {
		out["status"], out["completedAt"], out["updatedAt"] = "completed", w.completed.CreatedAt, w.completed.CreatedAt
	}
	return out
}
