package redisserver_test

import (
	"errors"
	"testing"

	"github.com/stormctl/stormctl/worlds/redisserver"
)

func TestStartStop(t *testing.T) {
	s, err := redisserver.Start(t.Context())
	if errors.Is(err, redisserver.ErrNoRedis) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() == "" {
		t.Error("no URL")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}
