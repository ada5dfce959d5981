package cli

import (
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/storm"
)

// unusedEndpoints names each endpoint flag the plans give no work to, with
// why: a store flag for a world not in the storm, or --redis-url when no
// vercel cell runs the count-index guard, the one user of that Redis. A
// storm runs on regardless; the lines only keep a user from believing a
// server was exercised that was not.
func unusedEndpoints(ep WorldEndpoints, plans ...*storm.Plan) []string {
	worldsUsed := map[string]bool{}
	countIndex := false
	for _, plan := range plans {
		for _, k := range plan.Cells {
			worldsUsed[k.World] = true
			if k.World == "vercel" && plan.Conditions[k.Condition].Knobs.Guard == eventlog.GuardCountIndex {
				countIndex = true
			}
		}
	}
	var lines []string
	if ep.PGURL != "" && !worldsUsed["postgres"] {
		lines = append(lines, "--pg-url: no postgres cell in this storm, so that server is not used (add --world postgres)")
	}
	vercel := []struct{ flag, url string }{{"--ingest-url", ep.IngestURL}, {"--dynamo-endpoint", ep.DynamoEndpoint}, {"--redis-url", ep.RedisURL}}
	for _, e := range vercel {
		if e.url != "" && !worldsUsed["vercel"] {
			lines = append(lines, e.flag+": no vercel cell in this storm, so that server is not used (add --world vercel)")
		}
	}
	if !worldsUsed["vercel"] {
		return lines
	}
	if ep.IngestURL != "" {
		// The vercel world then opens no store of its own (vercel.Config).
		for _, e := range vercel {
			if e.url != "" && e.flag != "--ingest-url" {
				lines = append(lines, e.flag+": the ingest server of --ingest-url has its own stores, so this one is not used")
			}
		}
		return lines
	}
	if ep.RedisURL != "" && !countIndex {
		lines = append(lines, "--redis-url: no vercel cell runs guard=count-index, the only user of Redis, so it is not used (e.g. --condition main/guard=count-index)")
	}
	return lines
}
