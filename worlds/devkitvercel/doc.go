// Package devkitvercel is the devkit-vercel world: the published
// @workflow/world-vercel package's storage (its events.create and
// events.list, run in the devkit sidecar like devkit-local's and
// devkit-postgres's packages) against stormctl's emulation of the backend
// it calls (package worlds/vercel/backend), over the vercel world's
// DynamoDB store. The package's client code (v4 frames with CBOR meta,
// cursor pagination, its retries and the errors it maps status codes to)
// is what a storm exercises; the backend mints the ids (wevt_ ULIDs, the
// legacy contract, for the 4.x package's spec 3 runs) and spends the
// mint-to-commit window, so the legacy race is the server's, as in
// production; for the spec 7 runs of the 5.0 betas (the devkit engine's
// beta channel) it allocates slot ids at commit (the backend's slot
// contract).
//
// Its queue (@vercel/queue, which only Vercel's can serve) is not used:
// the model engine delivers runs itself, as it does for every world, and
// the devkit engine runs the published runtime on world-vercel's storage
// composed with world-local's in-process queue (RuntimeStore: the World's
// own backend and project, so its faults reach the runtime too).
//
// Each World has a tenant of its own: a project id (which every request
// of its package carries), an embedded DynamoDB-API server and a store on
// it. One backend server per stormctl serves every tenant, for the package
// reads its server's URL from the sidecar's environment. Under --nemesis a
// World offers ingest-503 (a gate in front of its tenant), dynamo-pause (a
// gate in front of its DynamoDB-API server) and latency (a proxy between
// its store and that server).
//
// A request the emulation does not implement is answered 501 with a line
// naming its method and path: the package's error is infrastructure to the
// engine, and after the run the storm stops (SelfCheck) with that line.
package devkitvercel
