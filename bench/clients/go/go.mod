module github.com/redis-ratelimit/redis-ratelimit/bench/clients/go

go 1.25.0

require (
	github.com/redis-ratelimit/redis-ratelimit/clients/go v0.4.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.opentelemetry.io/otel v1.46.0 // indirect
	go.opentelemetry.io/otel/metric v1.46.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

// The package of this repository's tree.
replace github.com/redis-ratelimit/redis-ratelimit/clients/go => ../../../clients/go
