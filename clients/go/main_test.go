package ratelimit_test

import (
	"os"
	"testing"

	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopMatrix()
	os.Exit(code)
}
