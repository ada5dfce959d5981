package cli_test

import (
	"os"
	"testing"

	"github.com/stormctl/stormctl/internal/cli"
)

// mainEnv makes the test binary stormctl itself (cli.Main with the
// process's arguments), for tests that need a stormctl process to kill.
const mainEnv = "STORMCTL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}
