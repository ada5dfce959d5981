// Package sidecar installs and runs the Node process through which the devkit
// worlds reach the Workflow DevKit's own storage packages
// (@workflow/world-local, @workflow/world-postgres).
//
// The sidecar is stormctl's own small script, sidecar.mjs of the Node
// workspace internal/devkit/node (with the modules of its lib/ it
// imports), embedded in the binary with the package.json and
// package-lock.json that pin the packages' versions (the workspace's
// sidecar/). Install puts it in a cache directory
// ($XDG_CACHE_HOME/stormctl/devkit/<hash of the lock>, ~/.cache/... by
// default) and installs the pinned packages there with npm on first use,
// printing one progress line; later runs reuse the directory. A Checkout
// layout runs the same script against a local vercel/workflow checkout's
// built packages instead (--devkit-dir), and installs nothing. node and npm
// are the only prerequisites; without them Install fails with ErrNoNode.
//
// Start runs the script under node and speaks its protocol: one JSON object
// per line, requests on its stdin and answers on its file descriptor 3 (its
// stdout and stderr carry diagnostics only), each request with an id and
// answered by id, so that any number of requests are in flight at once
// (docs/sidecar-protocol.md lists the operations). The Go side owns the
// process: it runs in a process group of its own (so a terminal's Ctrl-C
// reaches stormctl, which then stops it), is killed when stormctl's thread
// dies (Pdeathsig, Linux), and exits by itself when its stdin closes, which
// happens however stormctl ends. Stop closes stdin, waits, and kills the
// group if it lingers.
package sidecar
